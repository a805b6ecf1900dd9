"""Schemathesis, with every check, against the live service and the menus contract.

Bounded and deterministic: ``-n`` examples per operation and ``--generation-deterministic``.
The JUnit report is kept under ``reports/``. ``schemathesis.toml`` at the project's root
is loaded by the CLI; it names the one narrowed expectation and why.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.live import live_service

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES_PER_OPERATION = "40"


def schemathesis() -> str:
    return shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or "schemathesis"


def test_menus_api_passes_every_schemathesis_check(tmp_path: Path) -> None:
    with live_service(tmp_path, env={"MENUS_RATE_LIMIT": "1000000"}) as service:
        key = service.api_key("schemathesis")
        done = subprocess.run(
            [
                schemathesis(),
                "run",
                f"{service.url}/v1/openapi.json",
                "-H",
                f"Authorization: Bearer {key}",
                "--checks",
                "all",
                "-n",
                EXAMPLES_PER_OPERATION,
                "--generation-deterministic",
                "--report",
                "junit",
                "--report-dir",
                str(ROOT / "reports" / "schemathesis-menus"),
            ],  # fmt: skip
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "No issues found" in done.stdout
