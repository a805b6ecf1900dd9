"""Schemathesis, with every check, against the developer console of a live service, signed in as an owner.

The owner signs up through the console's own "Create an account" (``tests/support/form_browser.Browser``
follows the provider's pages and the console's callback); the run carries that browser's console
session cookie. ``schemathesis-console.toml`` names each narrowed expectation and why.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.form_browser import console_owner_session
from tests.support.live import live_service
from tests.support.schemathesis_runs import cases, run_schemathesis


@pytest.mark.parametrize("signed_in", [True, False], ids=["owner", "anonymous"])
def test_schemathesis_finds_no_failure_in_the_console(tmp_path: Path, signed_in: bool) -> None:
    with live_service(tmp_path) as service:
        options: list[str] = []
        if signed_in:
            options = ["-H", f"Cookie: console_session={console_owner_session(service.url)}"]
        else:
            # No stateful phase: its links start from what a signed-in owner creates (an application, a key, an
            # invitation), and an anonymous visitor's forms are answered 303 (to sign in) or 400, so it can follow
            # none of the five (0 of 5 in the run measured: 40 scenarios, a sixth of the run's time). The other
            # phases still send every operation its examples, its coverage cases and generated input.
            options = ["--phases", "examples,coverage,fuzzing"]
        done = run_schemathesis(
            f"{service.url}/console/openapi.json",
            "schemathesis-console-" + ("owner" if signed_in else "anonymous"),
            *options,
            config="schemathesis-console.toml",
            examples="30",
        )
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]
    assert "No issues found" in done.stdout, done.stdout[-8000:]
    assert cases(done.stdout) > 50
