"""Schemathesis, with every check, against the live service and both contracts.

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


def run_schemathesis(url: str, report: str, *options: str) -> subprocess.CompletedProcess[str]:
    report_dir = str(ROOT / "reports" / report)
    command = [schemathesis(), "run", url, *options, "--checks", "all", "-n", EXAMPLES_PER_OPERATION,
               "--generation-deterministic", "--report", "junit", "--report-dir", report_dir]  # fmt: skip
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_menus_api_passes_every_schemathesis_check(tmp_path: Path) -> None:
    with live_service(tmp_path, env={"MENUS_RATE_LIMIT": "1000000"}) as service:
        key = service.api_key("schemathesis")
        done = run_schemathesis(
            f"{service.url}/v1/openapi.json", "schemathesis-menus", "-H", f"Authorization: Bearer {key}"
        )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "No issues found" in done.stdout


def test_identity_api_passes_every_schemathesis_check(tmp_path: Path) -> None:
    """Every check; schema-valid but protocol-invalid requests may get their documented 400 (schemathesis.toml)."""
    with live_service(tmp_path) as service:
        done = run_schemathesis(f"{service.url}/openapi.json", "schemathesis-identity")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "failures" not in done.stdout and " passed" in done.stdout
