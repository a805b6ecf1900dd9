"""Back-channel logout delivered end to end: the app's outbox worker posts each logout token to a relying party
listening on loopback, which verifies it with PyJWT against the provider's JWKS as OpenID Connect Back-Channel
Logout 1.0 §2.6 asks (signature, iss, aud, iat, exp, events, sid/sub, no nonce, typ); a relying party away is
posted to again until it answers. The rules (who is told, with which claims) are
tests/api/test_backchannel_logout.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import jwt
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog
from identity.backchannel_logout import CHANNEL
from identity.organizations import OrganizationStore
from identity.password_reset import replace_password
from identity.revoked_grants import Revoker
from identity.tables import mail_outbox
from identity.users import UserStore
from service.app import create_app
from service.settings import Settings
from tests.support.identity_fixtures import PASSWORD
from tests.support.live import free_port
from tests.support.token_flows import ISSUER, Registered, end_session, sign_in_client, user_tokens
from tests.support.waiting import eventually

EVENT = "http://schemas.openid.net/event/backchannel-logout"


class RelyingParty:
    """A relying party's back-channel logout endpoint on 127.0.0.1:``port``: it keeps each POST's form and answers
    ``statuses`` in turn (then 200). Started only when told (``start``): until then the port refuses."""

    def __init__(self, port: int | None = None, statuses: tuple[int, ...] = ()) -> None:
        self.port = port or free_port()
        self.received: list[tuple[str, str, dict[str, list[str]]]] = []  # (path, content type, form)
        self._statuses = list(statuses)
        self._arrived = threading.Condition()
        self._server: ThreadingHTTPServer | None = None

    def uri(self, path: str = "/backchannel-logout") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> None:
        party = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802  # http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode("ascii")
                with party._arrived:
                    status = party._statuses.pop(0) if party._statuses else 200
                    if status == 200:
                        party.received.append((self.path, self.headers.get("Content-Type", ""), parse_qs(body)))
                    party._arrived.notify_all()
                self.send_response(status)
                self.send_header("Cache-Control", "no-store")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def wait_for(self, count: int, timeout: float = 10) -> list[tuple[str, str, dict[str, list[str]]]]:
        """The POSTs answered 200, once ``count`` have arrived (fails after ``timeout`` seconds)."""
        with self._arrived:
            self._arrived.wait_for(lambda: len(self.received) >= count, timeout)
        assert len(self.received) >= count, f"{len(self.received)} of {count} logout tokens arrived"
        return list(self.received)


@pytest.fixture
def relying_party() -> Iterator[RelyingParty]:
    party = RelyingParty()
    party.start()
    yield party
    party.stop()


@pytest.fixture
def posting_app(settings: Settings, engine: Engine, catalog: Catalog) -> object:
    """The app over ``engine``'s database, its outbox polled every 0.1 s and retried after 0.1 s (doubling)."""
    return create_app(settings.with_changes(mail_poll_interval=0.1, mail_first_retry=0.1), catalog=catalog)


def ana_of_acme(engine: Engine) -> tuple[str, Any]:
    """A user's id and her organization."""
    acme = OrganizationStore(engine).create("Acme Foods")
    user = UserStore(engine).create("ana@example.com", "Ana Lima", PASSWORD, [(acme.id, "owner")])
    return user.id, acme


def verified(browser: TestClient, token: str, client: Registered) -> dict[str, Any]:
    """§2.6: the logout token checked as a relying party must, against the provider's JWKS."""
    header = jwt.get_unverified_header(token)
    assert header["typ"] == "logout+jwt" and header["alg"] == "RS256"
    jwks = jwt.PyJWKSet.from_dict(browser.get("/jwks").json())
    key = next(k for k in jwks.keys if k.key_id == header["kid"])
    claims: dict[str, Any] = jwt.decode(
        token,
        key=key,
        algorithms=["RS256"],
        audience=client.id,
        issuer=ISSUER,
        options={"require": ["iss", "aud", "iat", "exp", "jti", "events"]},
    )
    assert claims["events"] == {EVENT: {}} and "nonce" not in claims
    assert 0 < claims["exp"] - claims["iat"] <= 120
    return claims


def the_token(post: tuple[str, str, dict[str, list[str]]]) -> str:
    path, content_type, form = post
    assert content_type == "application/x-www-form-urlencoded" and list(form) == ["logout_token"]
    return form["logout_token"][0]


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
        replace_password(UserStore(engine), Revoker(engine), user_id, "a brand new kitchen password")
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
            assert eventually(lambda: _attempts(engine) >= 1, 10)  # refused, kept for a retry
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
