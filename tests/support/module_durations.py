"""How long each test module takes, as last measured (``tests/durations.json``): the order in which the modules are
handed to the xdist workers, longest first (``tests/conftest.py: longest_first``), so that no long module starts
late and keeps one worker busy after the others have finished (a plugin, registered by ``tests/conftest.py``).

    scripts/test --record-durations     # the whole suite as CI runs it; rewrites tests/durations.json

A module's figure is the sum of its tests' set-up, call and tear-down (its module-scoped servers included), in
seconds, on a two-core machine with three workers. A module the table does not have yet (a new one) counts as the
median module of its tier, until the table is made again; the order only moves time around, so a figure that is
off costs minutes only when it puts a long module last.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
TABLE = TESTS / "durations.json"


def module_of(path: Path) -> str:
    """``tests/system/test_nodes.py``: the table's key for a test file."""
    return path.resolve().relative_to(TESTS.parent).as_posix()


def load(table: Path = TABLE) -> dict[str, float]:
    if not table.exists():
        return {}
    found: dict[str, float] = json.loads(table.read_text(encoding="utf-8"))
    return found


class Estimate:
    """A module's duration: the table's figure, else the median of its tier's modules in the table."""

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table
        by_tier: dict[str, list[float]] = defaultdict(list)
        for module, seconds in table.items():
            by_tier[tier_of(module)].append(seconds)
        self.median = {tier: statistics.median(seconds) for tier, seconds in by_tier.items()}

    def __call__(self, module: str) -> float:
        if module in self.table:
            return self.table[module]
        return self.median.get(tier_of(module), 0.0)


def tier_of(module: str) -> str:
    parts = module.split("/")
    return parts[1] if len(parts) > 2 else ""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-durations",
        action="store_true",
        help=f"write each module's measured duration to {TABLE.relative_to(TESTS.parent)} (run the whole suite)",
    )


class Recorder:
    """Sums each test's phases by module, from the reports the controller receives (xdist or not)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid.split("::")[0]] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        table = load()
        table.update({module: round(seconds, 1) for module, seconds in self.seconds.items()})
        present = {module: seconds for module, seconds in table.items() if (TESTS.parent / module).is_file()}
        ordered = dict(sorted(present.items(), key=lambda kv: (-kv[1], kv[0])))
        TABLE.write_text(json.dumps(ordered, indent=1) + "\n", encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--record-durations") and not hasattr(config, "workerinput"):  # the controller records
        config.pluginmanager.register(Recorder(), "module_durations_recorder")
