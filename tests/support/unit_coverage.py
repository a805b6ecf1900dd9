"""Branch coverage of the unit tests, measured in the same pytest run as every other test (a pytest plugin, loaded
before the conftest files so that it sees the product's modules imported):

    python -m pytest -p tests.support.unit_coverage --unit-coverage=FILE ...
    coverage combine --data-file=FILE && python -m tools.coverage_report --unit FILE

In each process that runs tests (each xdist worker) coverage.py measures the collection, at whose end every product
module is imported (``import_every_module``), and each unit test with its fixtures, and is paused for the other
tests; each process saves its data beside ``FILE``
(``FILE.<host>.<pid>.<random>``). Python 3.11 has no ``sys.monitoring``: coverage.py traces every line it measures,
which costs the measured tests about 60% more CPU time. The unit tests are a tenth of the suite's CPU, so CI pays
some 20 s for it; the API tests, which run the code under test in process too, would cost two minutes of a CI run
on two cores, and the system tests' code runs in the processes they start. CI runs it (scripts/test) and holds the
total to its floor (``UNIT_FLOOR`` in tools/coverage_report.py); the whole measure, with every test and every
process the tests start, is ``tox -e coverage`` (docs/testing.md).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Generator
from pathlib import Path

import coverage
import pytest

TESTS = Path(__file__).resolve().parent.parent
MEASURED = ("unit",)  # the folders of tests/ whose tests are measured
SOURCE = ["cursors", "data", "handlers", "identity", "service"]  # as [tool.coverage.run] source_pkgs
NAME = "unit_coverage_measure"
# Modules whose import does something: the command line's entry point, and Alembic's script, which runs migrations.
NOT_IMPORTED = ("service.__main__", "service.database.migrations.env")


def import_every_module() -> None:
    """Import every module of the product, so that each one's import-time lines (definitions, constants) count as
    the collection's in every process: without it a module first imported by an API or system test on a worker is
    measured there only as far as unit tests run it, and the figure moves with the schedule."""
    for name in SOURCE:
        package = importlib.import_module(name)
        for found in pkgutil.walk_packages(package.__path__, f"{name}."):
            if found.name not in NOT_IMPORTED:
                importlib.import_module(found.name)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--unit-coverage",
        metavar="FILE",
        help="measure the branch coverage of the unit tests into coverage.py data files FILE.* "
        "(combine them with coverage combine --data-file=FILE)",
    )


def measured(item: pytest.Item) -> bool:
    path = item.path.resolve()
    return path.is_relative_to(TESTS) and path.relative_to(TESTS).parts[0] in MEASURED


class Measure:
    """This process's measurement: on from before the conftest files are imported to the end of the collection,
    then only while a unit test runs."""

    def __init__(self, data_file: str) -> None:
        # Not the project's [tool.coverage.run], whose patch = subprocess would measure every process the tests start.
        self.coverage = coverage.Coverage(
            data_file=data_file, data_suffix=True, branch=True, source_pkgs=SOURCE, config_file=False
        )
        # The collection's warnings (a package imported but none of its files run yet) are not the suite's.
        self.coverage.set_option(
            "run:disable_warnings", ["module-not-measured", "module-not-imported", "no-data-collected"]
        )
        self.coverage.start()
        self.running = True

    def pause(self) -> None:
        if self.running:
            self.coverage.stop()
            self.running = False

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if session.config.pluginmanager.hasplugin("dsession"):
            self.pause()  # xdist's controller collects and runs nothing: its workers measure

    def pytest_collection_finish(self) -> None:
        if self.running:
            import_every_module()
        self.pause()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        if not measured(item):
            return (yield)
        self.coverage.start()
        self.running = True
        try:
            return (yield)
        finally:
            self.pause()

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self) -> None:
        self.pause()
        self.coverage.save()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    data_file = early_config.known_args_namespace.unit_coverage
    if data_file:
        early_config.pluginmanager.register(Measure(str(Path(data_file).resolve())), NAME)
