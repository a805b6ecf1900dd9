"""Races across nodes: a credential change, a disable or a sign-out against a sign-in, and consents submitted at once.

Two live nodes share one PostgreSQL database; on SQLite one node takes both sides, from two threads. Each attempt
fires both requests through a barrier, one side 0–20 ms after the other (``tests/support/races.py``, which also
says what each race checks afterwards). CI runs a few attempts of each; ``python -m bench --only races`` runs the
full counts and prints every outcome. Run it alone with ``pytest tests/system/test_races.py -s`` to see them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import races
from tests.support.races import Deployment

# Attempts in CI: the reset race at the count its report asked for at least, the others fewer (the whole module
# runs in tens of seconds on two cores; docs/performance.md has the full counts).
ATTEMPTS = {"reset": 12, "console": 4, "disable": 6, "consent-twice": 6, "consent-scopes": 6, "renewal": 4}


@pytest.fixture(scope="module", params=["postgresql", "sqlite"])
def deployment(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    engine_name: str = request.param
    with races.deployment(engine_name, races.folder_for(tmp_path_factory.mktemp("races"), engine_name)) as found:
        yield found


def raced(race: str, deployment: Deployment) -> races.Tally:
    tally = races.run(race, deployment, ATTEMPTS[race])
    print(f"\n{tally.line()}")  # shown with pytest -s
    return tally


def test_a_password_reset_ends_what_a_racing_sign_in_with_the_old_password_started(deployment: Deployment) -> None:
    tally = raced("reset", deployment)
    assert tally.violations == 0, tally.line()
    assert any(outcome.startswith("reset done") for outcome in tally.outcomes), tally.line()


def test_a_console_password_change_ends_what_a_racing_sign_in_with_the_old_password_started(
    deployment: Deployment,
) -> None:
    tally = raced("console", deployment)
    assert tally.violations == 0, tally.line()
    assert any(outcome.startswith("change done") for outcome in tally.outcomes), tally.line()


def test_disabling_a_user_ends_what_a_racing_sign_in_started(deployment: Deployment) -> None:
    tally = raced("disable", deployment)
    assert tally.violations == 0, tally.line()


def test_one_consent_form_posted_twice_at_once_gives_one_code_and_one_expired_page(deployment: Deployment) -> None:
    tally = raced("consent-twice", deployment)
    assert tally.outcomes == {"one code, one 400 expired page": tally.attempts}, tally.line()


def test_two_consents_at_once_to_different_scopes_keep_both(deployment: Deployment) -> None:
    tally = raced("consent-scopes", deployment)
    assert tally.outcomes == {"both consents kept": tally.attempts}, tally.line()


def test_a_sign_in_again_racing_a_sign_out_leaves_nothing_live_in_the_ended_session(deployment: Deployment) -> None:
    tally = raced("renewal", deployment)
    assert tally.violations == 0, tally.line()
