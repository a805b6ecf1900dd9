"""Line and branch coverage by package, from the data ``coverage combine`` left, and the floor the total branch
coverage may not fall below.

    python -m tools.coverage_report      # after scripts/test in CI, scripts/coverage or tox -e coverage

The figures count every process the suite started (``[tool.coverage.run] patch = subprocess``): the xdist workers,
the servers the system tests run and the commands they call, not only the test process. docs/testing.md keeps the
last figures and says how to raise the floor.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The total branch coverage of the whole suite with its subprocesses, as last measured (docs/testing.md), less a
# little for the runs that differ by chance (a retry, a timing branch): raise it when coverage rises.
FLOOR = 91.0


def package_of(path: str) -> str:
    parts = Path(path).parts
    return "/".join(parts[:2]) if parts[0] == "service" and len(parts) > 2 else parts[0]


def row(covered: int, of: int) -> str:
    return f"{100 * covered / max(of, 1):6.1f}% of {of:5}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.coverage_report", description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)  # no options: --help, and an unknown argument refused
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "coverage.json"
        command = [sys.executable, "-m", "coverage", "json", "-q", "-o", str(report)]
        subprocess.run(command, cwd=ROOT, check=True)
        data = json.loads(report.read_text(encoding="utf-8"))
    sums: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for path, measured in data["files"].items():
        summary, totals = measured["summary"], sums[package_of(path)]
        totals[0] += summary["num_statements"]
        totals[1] += summary["covered_lines"]
        totals[2] += summary["num_branches"]
        totals[3] += summary["covered_branches"]
    print(f"{'package':24} {'lines':>16} {'branches':>16}")
    for package, (lines, covered, branches, taken) in sorted(sums.items()):
        print(f"{package:24} {row(covered, lines)} {row(taken, branches)}")
    totals = data["totals"]
    branch_rate = 100 * totals["covered_branches"] / totals["num_branches"]
    lines_row = row(totals["covered_lines"], totals["num_statements"])
    print(f"{'total':24} {lines_row} {row(totals['covered_branches'], totals['num_branches'])}")
    said = f"coverage: the total branch coverage is {branch_rate:.2f}%"
    if branch_rate < FLOOR:
        print(f"{said}, below its floor, {FLOOR}%: test the branches added (docs/testing.md)")
        return 1
    print(f"{said}; its floor is {FLOOR}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
