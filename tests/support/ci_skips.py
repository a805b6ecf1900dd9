"""A run in CI cannot pass in part (a pytest plugin, registered by ``tests/conftest.py``).

Locally, a test whose tool is missing (Redocly's and TypeScript's from ``npm ci``, openapi-diff) is skipped with the
command that installs it, so a checkout without node_modules still runs the rest. With ``CI`` set (.ci/run sets it,
as CI services do), such a test fails instead, naming what is missing; and so does any other skip: CI installs
every tool the suite uses, so a skip there is a test that did not run."""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

MARKER = "needs_tool"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def needs_tool(present: bool, tool: str, install: str) -> pytest.MarkDecorator:
    """Mark a test (or ``pytestmark`` a module) that runs only when ``tool`` is ``present``."""
    return pytest.mark.needs_tool(present=present, tool=tool, install=install)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(present, tool, install): skip locally, fail in CI, without the tool")


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers(MARKER):
        if not mark.kwargs["present"]:
            missing = f"{mark.kwargs['tool']} is missing: {mark.kwargs['install']}"
            if in_ci():
                pytest.fail(f"{missing} (CI is set: a test that needs a tool fails without it)", pytrace=False)
            pytest.skip(missing)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, object, object]:
    report = yield
    if in_ci() and isinstance(report, pytest.TestReport) and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where every test must run: {report.longrepr}"
    return report
