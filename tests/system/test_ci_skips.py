"""With CI set, a test that would be skipped fails (tests/support/ci_skips.py): checked on a small suite of its
own, run by pytest in a process of its own with the plugin, with and without CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.live import ROOT

SUITE = """
import pytest
from tests.support.ci_skips import needs_tool

@needs_tool(False, "the-tool", "apt-get install the-tool")
def test_needs_a_missing_tool():
    pass

@needs_tool(True, "python", "")
def test_needs_a_present_tool():
    pass

def test_skips_itself():
    pytest.skip("for no good reason")

def test_passes():
    pass
"""


def outcomes(tmp_path: Path, ci: str | None) -> dict[str, str]:
    (tmp_path / "test_example.py").write_text(SUITE, encoding="utf-8")
    env = {name: value for name, value in os.environ.items() if name != "CI"}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = str(ROOT)
    # None of the installed plugins (Schemathesis', Hypothesis', xdist's…): this suite needs only ci_skips, and
    # importing them was most of each run's 3 s of CPU.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.support.ci_skips", "-p", "no:cacheprovider", "-rA", "-q",
         "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    found = {}
    for line in done.stdout.splitlines():
        for word in ("PASSED", "SKIPPED", "FAILED", "ERROR"):
            if line.startswith(word) and "::" in line:
                found[line.split("::")[1].split()[0]] = "FAILED" if word == "ERROR" else word  # setup failed
            elif line.startswith(word + " [1]"):  # -rA's skip lines: "SKIPPED [1] path:line: reason"
                found["skipped: " + line.split(": ", 1)[1]] = word
    assert found, done.stdout + done.stderr
    return found


def test_locally_a_missing_tool_skips_and_in_ci_it_fails(tmp_path: Path) -> None:
    local = outcomes(tmp_path, None)
    assert local["test_needs_a_present_tool"] == local["test_passes"] == "PASSED"
    assert sum(outcome == "SKIPPED" for outcome in local.values()) == 2  # the missing tool's and the self-skip
    ci = outcomes(tmp_path, "true")
    assert ci["test_needs_a_missing_tool"] == ci["test_skips_itself"] == "FAILED"
    assert ci["test_needs_a_present_tool"] == ci["test_passes"] == "PASSED"


def test_ci_set_to_false_is_not_ci(tmp_path: Path) -> None:
    assert "FAILED" not in outcomes(tmp_path, "false").values()
