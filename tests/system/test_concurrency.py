"""Single use under fire: a code or a refresh token raced by many clients at once, on SQLite and PostgreSQL.

A live service per engine (real uvicorn, real sockets, its real thread pool), one org, user and
first-party client per service. Each round fires THREADS identical token requests at the same
instant (a barrier), each thread on its own connection, and counts the answers.

What "exactly once" means here. Exactly one request claims the code (or rotates the refresh
token): the database holds the tokens of exactly one issue. Every other request is a replay
(RFC 6749 §4.1.2) or a reuse (RFC 9700 §4.14.2), refused with ``invalid_grant``, and revokes every
token of the grant, the claimant's included. If that revocation lands while the claimant is still
issuing, the claimant is refused too (``identity.tokens.grants.revoke_if_raced``): so a round answers one
200 or none, never two, and when it is over no token of the grant is usable either way.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.common.tables import access_tokens, authorization_codes, refresh_tokens, revoked_grants
from identity.tokens.codes import hash_code
from service.database.db import make_engine
from tests.support.defaults import POOL
from tests.support.form_browser import Browser, Callback, Page
from tests.support.identity_fixtures import PASSWORD
from tests.support.live import REDIRECT_URI, LiveService, live_service
from tests.support.pkce_pairs import pkce_pair
from tests.support.postgres import throwaway_database

THREADS = 16
ROUNDS = 5
TIMEOUT = 30


@dataclass
class Figures:
    rounds: int = 0
    winners: int = 0  # 200 answers
    refused: int = 0  # 400 invalid_grant answers
    issues: int = 0  # requests that claimed the code or token and issued tokens, counted in the database

    def line(self, engine: str, race: str) -> str:
        return (
            f"{engine}: {race}: {self.rounds} rounds x {THREADS} threads: {self.winners} winners, "
            f"{self.refused} refused; {self.issues} token issues"
        )


@dataclass
class Identity:
    engine: str
    service: LiveService
    database: Engine  # the service's database, read to count what was issued
    client_id: str
    client_secret: str
    email: str
    browser: Browser
    figures: dict[str, Figures] = field(default_factory=dict)

    @property
    def basic(self) -> tuple[str, str]:
        return (self.client_id, self.client_secret)

    @property
    def token_url(self) -> str:
        return f"{self.service.url}/oauth2/token"


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any]


@dataclass(frozen=True)
class Family:
    """What the database holds for one grant: its access and refresh tokens."""

    access: int
    access_live: int
    refresh: int
    refresh_live: int  # neither rotated nor revoked
    revoked: bool  # marked in revoked_grants


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def identity(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Identity]:
    engine: str = request.param
    workdir = tmp_path_factory.mktemp(f"concurrency-{engine}")
    if engine == "postgresql":
        with throwaway_database() as url:
            with live_service(workdir, env={"MENUS_DATABASE_URL": url}) as service:
                yield from provisioned(engine, service, url)
    else:
        with live_service(workdir) as service:
            yield from provisioned(engine, service, f"sqlite:///{workdir / 'var' / 'regional-menus.sqlite3'}")


def provisioned(engine: str, service: LiveService, url: str) -> Iterator[Identity]:
    """One org, one user, one first-party client (code + refresh grants, openid + offline_access)."""
    org = service.cli_json("orgs", "create", "--name", "Race Kitchen")
    email = "racer@example.com"
    service.create_user(email, "Racer", PASSWORD, org["id"])
    client = service.cli_json(
        "clients", "create", "--name", "Racer", "--org", org["id"],
        "--redirect-uri", REDIRECT_URI, "--auth-method", "client_secret_basic", "--first-party",
        "--grant", "authorization_code", "--grant", "refresh_token", "--scope", "openid", "--scope", "offline_access",
    )  # fmt: skip
    database = make_engine(url, POOL)
    browser = Browser(service.url)
    found = Identity(engine, service, database, client["client_id"], client["client_secret"], email, browser)
    try:
        yield found
    finally:
        browser.http.close()
        database.dispose()
        for race, figures in found.figures.items():
            print(f"\n{figures.line(engine, race)}")  # shown with pytest -s


def fresh_code(identity: Identity) -> tuple[str, str]:
    """A new authorization code and its PKCE verifier; the browser signs in only the first time."""
    verifier, challenge = pkce_pair()
    query = urlencode({"response_type": "code", "client_id": identity.client_id, "redirect_uri": REDIRECT_URI,
                       "scope": "openid offline_access", "state": secrets.token_urlsafe(8),
                       "code_challenge": challenge, "code_challenge_method": "S256"})  # fmt: skip
    landed = identity.browser.go(f"{identity.service.url}/oauth2/authorize?{query}")
    if isinstance(landed, Page):
        assert landed.path == "/sign-in", landed.response.text
        landed = identity.browser.submit(landed, email=identity.email, password=PASSWORD)
    assert isinstance(landed, Callback), landed
    params = parse_qs(urlsplit(landed.url).query)
    assert "code" in params, landed.url
    return params["code"][0], verifier


def code_exchange(code: str, verifier: str) -> dict[str, str]:
    return {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI, "code_verifier": verifier}


def grant_of_code(identity: Identity, code: str) -> str:
    with identity.database.connect() as connection:
        grant_id = connection.scalar(
            sa.select(authorization_codes.c.grant_id).where(authorization_codes.c.code_hash == hash_code(code))
        )
    assert isinstance(grant_id, str), "the code is not in the database"
    return grant_id


def family(identity: Identity, grant_id: str) -> Family:
    with identity.database.connect() as connection:
        access = connection.execute(sa.select(access_tokens.c.revoked_at).where(access_tokens.c.grant_id == grant_id))
        access_rows = access.all()
        refresh = connection.execute(
            sa.select(refresh_tokens.c.rotated_at, refresh_tokens.c.revoked_at).where(
                refresh_tokens.c.grant_id == grant_id
            )
        ).all()
        marked = connection.scalar(sa.select(revoked_grants.c.grant_id).where(revoked_grants.c.grant_id == grant_id))
    return Family(
        access=len(access_rows),
        access_live=sum(row.revoked_at is None for row in access_rows),
        refresh=len(refresh),
        refresh_live=sum(row.rotated_at is None and row.revoked_at is None for row in refresh),
        revoked=marked is not None,
    )


def race(identity: Identity, data: dict[str, str]) -> list[Answer]:
    """THREADS identical POSTs to the token endpoint, released together, each on its own connection."""
    barrier = threading.Barrier(THREADS, timeout=TIMEOUT)
    answers: list[Answer | BaseException] = [RuntimeError("no answer")] * THREADS
    sessions = [requests.Session() for _ in range(THREADS)]
    for session in sessions:  # connect before the barrier, so that the requests leave together
        session.get(f"{identity.service.url}/.well-known/openid-configuration", timeout=TIMEOUT).close()

    def fire(index: int) -> None:
        try:
            barrier.wait()
            response = sessions[index].post(identity.token_url, data=data, auth=identity.basic, timeout=TIMEOUT)
            try:
                body = dict(response.json())
            except ValueError:
                body = {"text": response.text}
            answers[index] = Answer(response.status_code, body)
        except BaseException as error:  # reported below, not lost in the thread
            barrier.abort()
            answers[index] = error

    threads = [threading.Thread(target=fire, args=(index,)) for index in range(THREADS)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT * 2)
    finally:
        for session in sessions:
            session.close()
    for answer in answers:
        if isinstance(answer, BaseException):
            raise answer
    return [answer for answer in answers if isinstance(answer, Answer)]


def tally(answers: list[Answer]) -> dict[tuple[int, str], int]:
    """The answers, counted by status and error description (no tokens: they would drown the message)."""
    counted: dict[tuple[int, str], int] = {}
    for answer in answers:
        key = (answer.status, str(answer.body.get("error_description", answer.body.get("error", ""))))
        counted[key] = counted.get(key, 0) + 1
    return counted


def judged(identity: Identity, race_name: str, answers: list[Answer], issues: int) -> Answer | None:
    """The winner, if any, after checking the rules every race obeys; the round counts in the figures."""
    log = identity.service.workdir / "server.log"
    seen = f"{identity.engine}, {race_name} race: {tally(answers)}; server log {log}"
    assert all(answer.status < 500 for answer in answers), f"server errors: {seen}"
    winners = [answer for answer in answers if answer.status == 200]
    refused = [answer for answer in answers if answer.status != 200]
    won = len(winners)
    assert won <= 1, f"{won} winners: {seen}"
    assert all(answer.status == 400 and answer.body.get("error") == "invalid_grant" for answer in refused), seen
    assert issues == 1, f"{issues} requests issued tokens: {seen}"
    figures = identity.figures.setdefault(race_name, Figures())
    figures.rounds += 1
    figures.winners += len(winners)
    figures.refused += len(refused)
    figures.issues += issues
    return winners[0] if winners else None


def introspect(identity: Identity, token: str) -> dict[str, Any]:
    response = requests.post(
        f"{identity.service.url}/oauth2/introspect", data={"token": token}, auth=identity.basic, timeout=TIMEOUT
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_a_code_raced_by_many_threads_is_exchanged_exactly_once(identity: Identity) -> None:
    """RFC 6749 §4.1.2: one request claims the code; the replays are invalid_grant and revoke what it issued."""
    for _ in range(ROUNDS):
        code, verifier = fresh_code(identity)
        grant_id = grant_of_code(identity, code)
        answers = race(identity, code_exchange(code, verifier))
        after = family(identity, grant_id)
        assert after.access == after.refresh, after  # one access and one refresh token per issue
        winner = judged(identity, "code", answers, issues=after.access)
        # The code was replayed (by the losers): every token issued from it is revoked.
        assert after.revoked and after.access_live == 0 and after.refresh_live == 0, after
        if winner is not None:
            assert introspect(identity, winner.body["access_token"]) == {"active": False}
            assert introspect(identity, winner.body["refresh_token"]) == {"active": False}


def test_a_refresh_token_raced_by_many_threads_rotates_exactly_once(identity: Identity) -> None:
    """RFC 9700 §4.14.2: one request rotates the token; the reuses are invalid_grant and revoke the family."""
    for _ in range(ROUNDS):
        code, verifier = fresh_code(identity)
        response = requests.post(identity.token_url, data=code_exchange(code, verifier), auth=identity.basic,
                                 timeout=TIMEOUT)  # fmt: skip
        assert response.status_code == 200, response.text
        grant_id = grant_of_code(identity, code)
        before = family(identity, grant_id)
        assert (before.access, before.refresh, before.refresh_live, before.revoked) == (1, 1, 1, False), before
        refresh = {"grant_type": "refresh_token", "refresh_token": response.json()["refresh_token"]}
        answers = race(identity, refresh)
        after = family(identity, grant_id)
        issues = after.refresh - before.refresh
        assert after.access - before.access == issues, after  # one access and one refresh token per rotation
        winner = judged(identity, "refresh", answers, issues=issues)
        # The rotated token was reused (by the losers): the whole family is revoked, the new token too.
        assert after.revoked and after.access_live == 0 and after.refresh_live == 0, after
        if winner is not None:
            reuse = {"grant_type": "refresh_token", "refresh_token": winner.body["refresh_token"]}
            again = requests.post(identity.token_url, data=reuse, auth=identity.basic, timeout=TIMEOUT)
            assert again.status_code == 400 and again.json()["error"] == "invalid_grant", again.text
            assert introspect(identity, winner.body["access_token"]) == {"active": False}
