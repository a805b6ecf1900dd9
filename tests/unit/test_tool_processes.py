"""The environment of the tools the tests run (tests/support/tool_processes.py): coverage.py's variables left out,
so that ``scripts/coverage`` measures the service's processes and not Schemathesis, pip or a generator."""

from __future__ import annotations

import pytest

from tests.support.tool_processes import tool_env


def test_a_tools_environment_leaves_out_coverages_variables_and_keeps_every_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COVERAGE_PROCESS_CONFIG", '{"branch": true}')
    monkeypatch.setenv("COVERAGE_PROCESS_START", "pyproject.toml")
    monkeypatch.setenv("MENUS_TEST_KEPT", "yes")
    env = tool_env(SCHEMATHESIS_HOOKS="tests.support.schemathesis_hooks")
    assert "COVERAGE_PROCESS_CONFIG" not in env and "COVERAGE_PROCESS_START" not in env
    assert env["MENUS_TEST_KEPT"] == "yes" and env["SCHEMATHESIS_HOOKS"] == "tests.support.schemathesis_hooks"


def test_a_given_environment_is_the_base_and_an_extra_variable_cannot_bring_coverage_back() -> None:
    env = tool_env({"PATH": "/bin", "COVERAGE_PROCESS_CONFIG": "{}"}, COVERAGE_PROCESS_START="pyproject.toml")
    assert env == {"PATH": "/bin"}
