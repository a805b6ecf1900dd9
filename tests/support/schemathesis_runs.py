"""Schemathesis runs against a live service, as the contract's users run it (the command line, from the project's
root, with the project's hooks)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.live import ROOT
from tests.support.tool_processes import tool_env

EXAMPLES_PER_OPERATION = "60"
STATEFUL_EXAMPLES = "80"  # scenarios from the token endpoint: enough to follow each of its links


def schemathesis() -> str:
    return shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or "schemathesis"


def run_schemathesis(
    url: str,
    report: str,
    *options: str,
    config: str | None = None,
    env: dict[str, str] | None = None,
    examples: str = EXAMPLES_PER_OPERATION,
) -> subprocess.CompletedProcess[str]:
    """``schemathesis [--config-file CONFIG] run URL --checks all …`` from the project's root."""
    report_dir = str(ROOT / "reports" / report)
    command = [schemathesis(), *(["--config-file", config] if config else []), "run", url, *options,
               "--checks", "all", "-n", examples, "--generation-deterministic",
               "--report", "junit", "--report-dir", report_dir]  # fmt: skip
    hooks = {"SCHEMATHESIS_HOOKS": "tests.support.schemathesis_hooks"}  # text/html pages validated as strings
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=600, env=tool_env(**hooks, **(env or {}))
    )


def cases(output: str) -> int:
    """The number of test cases Schemathesis reports having generated."""
    found = re.search(r"Test cases:\s*\n?\s*(\d+) generated", output)
    assert found, output[-3000:]
    return int(found.group(1))


def run_schemathesis_as_an_outsider(
    url: str, folder: Path, *headers: str, examples: str = "20", also_excluded: tuple[str, ...] = ()
) -> str:
    """``schemathesis run URL -H … --checks all`` but ``positive_data_acceptance`` (which cannot know OAuth state),
    as someone outside the project runs it: from an empty folder (no ``schemathesis.toml``), without our hooks.
    ``also_excluded``: checks a caller's contract documents as not applying (each caller says why). Bounded by ``-n``
    and a timeout; returns what it printed (its exit status is asserted 0)."""
    excluded = ",".join(("positive_data_acceptance", *also_excluded))
    command = [schemathesis(), "run", url, *[part for header in headers for part in ("-H", header)],
               "--checks", "all", "--exclude-checks", excluded, "-n", examples,
               "--generation-deterministic"]  # fmt: skip
    env = tool_env({name: value for name, value in os.environ.items() if not name.startswith("SCHEMATHESIS_")})
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300, env=env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-8000:]
    return output
