"""Back-channel logout delivered end to end: the app's outbox worker posts each logout token to a relying party
listening on loopback, which verifies it with PyJWT against the provider's JWKS as OpenID Connect Back-Channel
Logout 1.0 §2.6 asks (signature, iss, aud, iat, exp, events, sid/sub, no nonce, typ); a relying party away is
posted to again until it answers. The rules (who is told, with which claims) are
tests/api/test_backchannel_logout.py."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import jwt
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog
from identity.accounts.organizations import OrganizationStore
from identity.accounts.password_reset import replace_password
from identity.accounts.users import UserStore
from identity.common.tables import mail_outbox
from identity.mail.outbox import Mail, Outbox
from identity.sessions.backchannel_logout import CHANNEL, KIND
from identity.tokens.logout_tokens import LogoutPost
from identity.tokens.revoked_grants import Revoker
from service.outbound.backchannel import LogoutPoster
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.identity_fixtures import PASSWORD
from tests.support.logout_rp import RelyingParty, the_token, verified
from tests.support.passwords import FAST_HASHING
from tests.support.token_flows import end_session, sign_in_client, user_tokens
from tests.support.waiting import eventually


@pytest.fixture
def posting_app(settings: Settings, engine: Engine, catalog: Catalog) -> object:
    """The app over ``engine``'s database, its outbox polled every 0.1 s and retried after 0.1 s (doubling)."""
    return make_app(settings.with_changes(mail_poll_interval=0.1, mail_first_retry=0.1), catalog=catalog)


def ana_of_acme(engine: Engine) -> tuple[str, Any]:
    """A user's id and her organization."""
    acme = OrganizationStore(engine).create("Acme Foods")
    user = UserStore(engine, hashing=FAST_HASHING).create("ana@example.com", "Ana Lima", PASSWORD, [(acme.id, "owner")])
    return user.id, acme


def sid_of(tokens: dict[str, Any]) -> str:
    return str(jwt.decode(tokens["id_token"], options={"verify_signature": False})["sid"])


def logout_statuses(engine: Engine) -> list[str]:
    query = sa.select(mail_outbox.c.status).where(mail_outbox.c.channel == CHANNEL).order_by(mail_outbox.c.created_at)
    with engine.connect() as connection:
        return list(connection.scalars(query))


def test_end_session_and_a_password_reset_post_verified_logout_tokens_to_the_holders_only(
    posting_app: object, engine: Engine, relying_party: RelyingParty
) -> None:
    user_id, acme = ana_of_acme(engine)
    planner = sign_in_client(engine, acme, "Menu Planner", backchannel_logout_uri=relying_party.uri("/planner"))
    silent = sign_in_client(engine, acme, "Shopping List")  # holds the session, registered no URI
    bystander = sign_in_client(engine, acme, "Bystander", backchannel_logout_uri=relying_party.uri("/bystander"))
    with TestClient(posting_app, follow_redirects=False) as browser:  # type: ignore[arg-type]
        tokens = user_tokens(browser, planner)
        user_tokens(browser, silent)
        assert end_session(browser, "GET", id_token_hint=tokens["id_token"]).status_code == 200
        [signed_out] = relying_party.wait_for(1)
        assert signed_out[0] == "/planner"
        claims = verified(browser, the_token(signed_out), planner)
        assert (claims["sid"], claims["sub"]) == (sid_of(tokens), user_id)
        user_tokens(browser, planner)  # a new session
        replace_password(
            UserStore(engine, hashing=FAST_HASHING), Revoker(engine), user_id, "a brand new kitchen password"
        )
        reset = relying_party.wait_for(2)[1]
        claims = verified(browser, the_token(reset), planner)
        assert claims["sub"] == user_id and "sid" not in claims  # every session of the user (§2.6)
    assert logout_statuses(engine) == ["sent", "sent"]  # none for the client without a URI, nor the bystander
    assert [path for path, _, _ in relying_party.received] == ["/planner", "/planner"]
    assert bystander.id not in str(relying_party.received)


def test_a_logout_token_is_posted_again_until_the_relying_party_is_back(posting_app: object, engine: Engine) -> None:
    party = RelyingParty(statuses=(503,))  # away (the port refuses), then busy once, then there
    user_id, acme = ana_of_acme(engine)
    planner = sign_in_client(engine, acme, "Menu Planner", backchannel_logout_uri=party.uri())
    try:
        with TestClient(posting_app, follow_redirects=False) as browser:  # type: ignore[arg-type]
            tokens = user_tokens(browser, planner)
            end_session(browser, "GET", id_token_hint=tokens["id_token"])
            # refused and kept for a retry (an attempt counts from its claim, before the refusal is recorded)
            assert eventually(lambda: _refusals(engine) >= 1, 10)
            assert logout_statuses(engine) == ["pending"]
            party.start()
            [post] = party.wait_for(1)
            claims = verified(browser, the_token(post), planner)
            assert claims["sub"] == user_id and claims["sid"] == sid_of(tokens)
        assert logout_statuses(engine) == ["sent"] and _attempts(engine) >= 3
    finally:
        party.stop()


def _attempts(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(
            connection.scalar(sa.select(sa.func.max(mail_outbox.c.attempts)).where(mail_outbox.c.channel == CHANNEL))
            or 0
        )


def _refusals(engine: Engine) -> int:
    """Logout tokens whose last attempt failed and was recorded."""
    query = sa.select(sa.func.count()).where(mail_outbox.c.channel == CHANNEL, mail_outbox.c.last_error.is_not(None))
    with engine.connect() as connection:
        return int(connection.scalar(query) or 0)


@pytest.fixture
def woken_app(settings: Settings, engine: Engine, catalog: Catalog) -> object:
    """The app over ``engine``'s database, its outbox never polled after its first look (an hour between two): a
    logout token leaves only when the worker is woken."""
    return make_app(settings.with_changes(mail_poll_interval=3600, backchannel_logout_timeout=3), catalog=catalog)


def test_a_logout_token_is_posted_as_soon_as_end_session_commits_not_at_the_next_poll(
    woken_app: object, engine: Engine, relying_party: RelyingParty
) -> None:
    _, acme = ana_of_acme(engine)
    planner = sign_in_client(engine, acme, "Menu Planner", backchannel_logout_uri=relying_party.uri("/planner"))
    with TestClient(woken_app, follow_redirects=False) as browser:  # type: ignore[arg-type]
        tokens = user_tokens(browser, planner)
        assert end_session(browser, "GET", id_token_hint=tokens["id_token"]).status_code == 200
        [signed_out] = relying_party.wait_for(1, timeout=3)  # the next poll is an hour away
        assert claims_of(browser, signed_out, planner)["sid"] == sid_of(tokens)
    assert logout_statuses(engine) == ["sent"]


def test_an_endpoint_that_never_answers_holds_up_no_other_clients_logout_token(
    woken_app: object, engine: Engine, relying_party: RelyingParty
) -> None:
    """Six logout tokens queued for a client whose endpoint takes each POST and never answers (the issue's
    scenario), then a healthy client's end-session: its token arrives long before the first of the six could
    time out (3 s here), and the sleeping endpoint never has more than two posts at once."""
    user_id, acme = ana_of_acme(engine)
    planner = sign_in_client(engine, acme, "Menu Planner", backchannel_logout_uri=relying_party.uri("/planner"))
    asleep = RelyingParty(asleep=True)
    napper = sign_in_client(engine, acme, "Napper", backchannel_logout_uri=asleep.uri())
    with engine.begin() as connection:
        for _ in range(6):
            Outbox.write(connection, CHANNEL, Mail(KIND, napper.id, {"sub": user_id}), datetime.now(UTC))
    asleep.start()
    try:
        with TestClient(woken_app, follow_redirects=False) as browser:  # type: ignore[arg-type]
            asleep.wait_taken(2)  # its first look: two posts under way to that host, the other four put back
            tokens = user_tokens(browser, planner)
            end_session(browser, "GET", id_token_hint=tokens["id_token"])
            ended = time.monotonic()
            [signed_out] = relying_party.wait_for(1, timeout=3)
            waited = time.monotonic() - ended
            assert claims_of(browser, signed_out, planner)["sid"] == sid_of(tokens)
            assert asleep.taken == 2
            asleep.stop()  # its connections close: the two posts end
    finally:
        asleep.stop()
    assert waited < 2  # not held up by a post to the sleeping endpoint (each would take 3 s to time out)


def claims_of(browser: TestClient, post: Any, client: Any) -> dict[str, Any]:
    return verified(browser, the_token(post), client)


def test_a_logout_post_has_one_deadline_even_for_an_answer_sent_a_byte_at_a_time() -> None:
    """httpx's timeouts bound each read alone: an endpoint trickling its answer must not hold the worker past the
    claim's lease (service/outbound/backchannel.py)."""
    with trickling_endpoint() as uri:
        poster = LogoutPoster(timeout=0.3, loopback=True)
        with pytest.raises(TimeoutError):
            asyncio.run(poster.post(LogoutPost(uri, "a.logout.token")))


@contextmanager
def trickling_endpoint() -> Iterator[str]:
    """An HTTP endpoint on loopback that reads the request, then sends its answer's head one byte every 50 ms."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        connection, _ = server.accept()
        with connection:
            connection.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 1000:
                if stop.wait(0.05):
                    return
                connection.sendall(bytes([byte]))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/logout"
    finally:
        stop.set()
        server.close()
        thread.join(timeout=5)
