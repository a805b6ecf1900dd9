"""OpenID Connect Back-Channel Logout 1.0, its rules (identity/sessions/backchannel_logout.py): which clients hold a
session, which get a logout token and with which claims, the back-channel logout URI's rules, discovery, and
the token signed at delivery. The delivery itself, to a relying party on loopback, is
tests/system/test_backchannel_logout_delivery.py.

The app's outbox workers look once at start-up and then not for an hour: these tests read the outbox."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog
from identity.accounts.disabled_users import disable
from identity.accounts.password_reset import replace_password
from identity.accounts.users import UserStore
from identity.clients.registry import ClientStore
from identity.common.errors import InvalidInput
from identity.common.tables import browser_sessions, mail_outbox
from identity.keys.sealing import Sealer, new_key
from identity.keys.signing_keys import SigningKeys
from identity.mail.outbox import Claimed, Mail, Outbox, Undeliverable
from identity.sessions import backchannel_logout
from identity.sessions.backchannel_logout import CHANNEL
from identity.tokens.logout_tokens import LOGOUT_TOKEN_TTL, LogoutTokens
from identity.tokens.revoked_grants import Revoker
from service.cli.commands import run
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.clocks import MovableClock
from tests.support.defaults import DELIVERY, SIGNING_KEYS_MAX_AGE
from tests.support.identity_fixtures import PASSWORD
from tests.support.passwords import FAST_HASHING
from tests.support.postgres import empty_every_table
from tests.support.token_flows import ISSUER, Registered, World, end_session, sign_in_client, user_tokens
from tests.support.token_services import token_services

RP_URI = "https://rp.example.com/backchannel-logout"
EVENT = "http://schemas.openid.net/event/backchannel-logout"


@pytest.fixture
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """SQLite; PostgreSQL too for a test parametrized with it (``indirect``): the holders' insert is each
    dialect's own."""
    if getattr(request, "param", "sqlite") == "sqlite":
        return f"sqlite:///{tmp_path / 'state.sqlite3'}"
    url: str = request.getfixturevalue("postgres_database")
    empty_every_table(url)
    return url


@pytest.fixture
def app(settings: Settings, engine: Engine, catalog: Catalog, clock: MovableClock):  # type: ignore[no-untyped-def]
    return make_app(settings.with_changes(mail_poll_interval=3600), catalog=catalog, clock=clock)


def logout_messages(engine: Engine) -> list[tuple[str, dict[str, Any]]]:
    """The outbox's logout tokens to post: (client id, claims it will carry), oldest first."""
    query = (
        sa.select(mail_outbox.c.recipient, mail_outbox.c.params)
        .where(mail_outbox.c.channel == CHANNEL)
        .order_by(mail_outbox.c.created_at, mail_outbox.c.id)
    )
    with engine.connect() as connection:
        return [(row.recipient, dict(row.params)) for row in connection.execute(query)]


def sid_of(tokens: dict[str, Any]) -> str:
    return str(jwt.decode(tokens["id_token"], options={"verify_signature": False})["sid"])


def with_uri(engine: Engine, registered: Registered, *, session_required: bool = False) -> None:
    ClientStore(engine).update(
        registered.id, backchannel_logout_uri=RP_URI, backchannel_logout_session_required=session_required
    )


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)
def test_end_session_queues_a_logout_token_with_the_sid_for_each_client_holding_the_session_with_a_uri(
    http: TestClient, world: World, engine: Engine
) -> None:
    with_uri(engine, world.planner)
    bystander = sign_in_client(engine, world.acme, "Bystander", backchannel_logout_uri=RP_URI + "/b")
    tokens = user_tokens(http, world.planner)
    user_tokens(http, world.companion)  # holds the session too, but registered no back-channel logout URI
    response = end_session(http, "GET", id_token_hint=tokens["id_token"])
    assert response.status_code == 200, response.text
    sid = sid_of(tokens)
    assert logout_messages(engine) == [(world.planner.id, {"sub": world.ana.id, "sid": sid})]
    assert bystander.id not in {client for client, _ in logout_messages(engine)}  # it never redeemed a code
    Revoker(engine).revoke_session(sid)  # signed out again: the holders were told already
    assert len(logout_messages(engine)) == 1


def test_signing_in_as_someone_else_tells_the_clients_holding_the_previous_session(
    http: TestClient, world: World, engine: Engine
) -> None:
    with_uri(engine, world.planner)
    UserStore(engine, hashing=FAST_HASHING).create(
        "bea@example.com", "Bea Costa", PASSWORD, [(world.acme.id, "member")]
    )
    anas = sid_of(user_tokens(http, world.planner))
    renewed = sid_of(user_tokens(http, world.planner, prompt="login"))  # the same user: no sign-out
    assert renewed == anas and logout_messages(engine) == []
    user_tokens(http, world.companion, prompt="login", email="bea@example.com")
    assert logout_messages(engine) == [(world.planner.id, {"sub": world.ana.id, "sid": anas})]


def test_a_password_reset_tells_each_client_holding_a_session_of_the_user(
    app: Any, http: TestClient, world: World, engine: Engine
) -> None:
    with_uri(engine, world.planner)  # one token with sub alone: every session of the user
    with_uri(engine, world.companion, session_required=True)  # one token per session, each with its sid
    with TestClient(app, follow_redirects=False) as phone:
        sessions = [sid_of(user_tokens(browser, world.planner)) for browser in (http, phone)]
        companion_sid = sid_of(user_tokens(phone, world.companion))
    assert companion_sid == sessions[1]
    replace_password(
        UserStore(engine, hashing=FAST_HASHING), Revoker(engine), world.ana.id, "a brand new kitchen password"
    )
    assert sorted(logout_messages(engine), key=json.dumps) == sorted(
        [
            (world.planner.id, {"sub": world.ana.id}),
            (world.companion.id, {"sub": world.ana.id, "sid": companion_sid}),
        ],
        key=json.dumps,
    )


def test_disabling_a_user_tells_each_client_holding_a_session_of_the_user(
    http: TestClient, world: World, engine: Engine
) -> None:
    with_uri(engine, world.planner)
    sid = sid_of(user_tokens(http, world.planner))
    assert disable(UserStore(engine, hashing=FAST_HASHING), Revoker(engine), world.ana.id)
    assert logout_messages(engine) == [(world.planner.id, {"sub": world.ana.id})]
    assert sid  # the session it held ended with the others


def test_a_code_issued_but_never_redeemed_holds_no_session(http: TestClient, world: World, engine: Engine) -> None:
    with_uri(engine, world.planner)
    with_uri(engine, world.companion)
    tokens = user_tokens(http, world.companion)
    http.get(
        "/oauth2/authorize",
        params={"response_type": "code", "client_id": world.planner.id, "scope": "openid"},
    )  # whatever it answers, the planner redeems nothing
    end_session(http, "GET", id_token_hint=tokens["id_token"])
    assert [client for client, _ in logout_messages(engine)] == [world.companion.id]


@pytest.mark.parametrize(
    ("uri", "refusal"),
    [
        ("http://rp.example.com/logout", "must use https"),
        ("ftp://rp.example.com/logout", "must use https"),
        ("https://rp.example.com/logout#done", "without a fragment"),
        ("https://rp.example.com/logout#", "without a fragment"),
        ("/logout", "absolute URL"),
        ("https://rp.example.com/log out", "absolute URL"),
        ("https://rp.example.com/logout\n", "absolute URL"),
        ("https://ana:secret@rp.example.com/logout", "user or a password"),
        ("https://rp.example.com:99999/logout", "not a URI"),
        ("https://rp.example.com/" + "a" * 2000, "longer than 2000"),
    ],
)
def test_a_backchannel_logout_uri_is_https_or_loopback_http_without_fragment_and_bounded(
    world: World, engine: Engine, uri: str, refusal: str
) -> None:
    with pytest.raises(InvalidInput, match=refusal):
        sign_in_client(engine, world.acme, "Refused", backchannel_logout_uri=uri)


@pytest.mark.parametrize(
    "uri",
    [
        "https://rp.example.com/logout?tenant=7",
        "http://127.0.0.1:9000/logout",
        "http://[::1]/logout",
        "http://localhost/x",
    ],
)
def test_a_backchannel_logout_uri_may_have_a_port_path_and_query(world: World, engine: Engine, uri: str) -> None:
    registered = sign_in_client(engine, world.acme, "Accepted", backchannel_logout_uri=uri)
    assert ClientStore(engine).get(registered.id).backchannel_logout_uri == uri  # type: ignore[union-attr]


def test_requiring_the_sid_needs_a_backchannel_logout_uri(world: World, engine: Engine) -> None:
    with pytest.raises(InvalidInput, match="needs a back-channel logout URI"):
        sign_in_client(engine, world.acme, "No URI", backchannel_logout_session_required=True)
    with pytest.raises(InvalidInput, match="needs a back-channel logout URI"):
        ClientStore(engine).update(world.planner.id, backchannel_logout_session_required=True)


def test_the_cli_registers_updates_and_removes_a_backchannel_logout_uri_and_refuses_a_bad_one_in_one_line(
    world: World, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--json", "--database-url", database_url]
    with pytest.raises(SystemExit) as refused:
        run(["clients", "create", "--name", "RP", "--org", world.acme.id, "--auth-method", "client_secret_basic",
             "--redirect-uri", "https://rp.example.com/cb", "--backchannel-logout-uri", "http://rp.example.com/bc",
             *common])  # fmt: skip
    assert refused.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "must use https (http only on a loopback address)" in json.loads(error)["error"]
    run(["clients", "create", "--name", "RP", "--org", world.acme.id, "--auth-method", "client_secret_basic",
         "--redirect-uri", "https://rp.example.com/cb", "--backchannel-logout-uri", RP_URI,
         "--backchannel-logout-session-required", *common])  # fmt: skip
    created = json.loads(capsys.readouterr().out)
    assert created["backchannel_logout_uri"] == RP_URI and created["backchannel_logout_session_required"] is True
    run(["clients", "update", created["client_id"], "--no-backchannel-logout-uri", *common])  # fmt: skip
    updated = json.loads(capsys.readouterr().out)
    assert updated["backchannel_logout_uri"] is None and updated["backchannel_logout_session_required"] is False


def test_discovery_advertises_backchannel_logout_with_sid(http: TestClient) -> None:
    document = http.get("/.well-known/openid-configuration").json()
    assert document["backchannel_logout_supported"] is True
    assert document["backchannel_logout_session_supported"] is True


def test_a_logout_token_is_signed_at_delivery_with_a_fresh_exp_and_the_message_id_as_jti(
    world: World, engine: Engine
) -> None:
    clock = MovableClock()
    keys = SigningKeys(
        engine, timedelta(0), timedelta(minutes=10), sealer=Sealer([new_key()]), max_age=SIGNING_KEYS_MAX_AGE
    )
    keys.ensure()
    logouts = LogoutTokens(ClientStore(engine), token_services(engine, keys, clock).minter)
    with_uri(engine, world.planner)
    outbox = Outbox(engine, DELIVERY, clock, channel=CHANNEL)
    message_id = outbox.enqueue(Mail("logout_token", world.planner.id, {"sub": world.ana.id, "sid": "ses_1"}))
    clock.advance(3600)  # an hour of retries later
    claimed = outbox.claim()
    assert claimed is not None and claimed.id == message_id
    post = logouts.prepare(claimed)
    token = post.token
    assert post.uri == RP_URI and not post.internal
    assert jwt.get_unverified_header(token)["typ"] == "logout+jwt"
    key = jwt.PyJWKSet.from_dict(keys.jwks()).keys[0]
    claims = jwt.decode(
        token,
        key=key,
        algorithms=["RS256"],
        audience=world.planner.id,
        issuer=ISSUER,
        options={"verify_exp": False, "verify_iat": False},
    )
    assert claims["iat"] == int(clock.now().timestamp())
    assert claims["exp"] - claims["iat"] == LOGOUT_TOKEN_TTL.total_seconds()
    assert claims["jti"] == message_id and claims["events"] == {EVENT: {}}
    assert (claims["sub"], claims["sid"]) == (world.ana.id, "ses_1") and "nonce" not in claims
    ClientStore(engine).update(world.planner.id, backchannel_logout_uri="")
    with pytest.raises(Undeliverable):
        logouts.prepare(claimed)  # its URI removed meanwhile: nothing is posted


def test_the_holders_of_a_session_are_purged_with_its_row(http: TestClient, world: World, engine: Engine) -> None:
    sid = sid_of(user_tokens(http, world.planner))
    user_tokens(http, world.companion)
    with engine.begin() as connection:
        assert backchannel_logout.purge(connection) == 0  # the session's row is there
        connection.execute(browser_sessions.delete().where(browser_sessions.c.id == sid))
        assert backchannel_logout.purge(connection) == 2


def test_mail_and_logout_tokens_are_claimed_by_their_own_workers(world: World, engine: Engine) -> None:
    mail, logouts = Outbox(engine, DELIVERY), Outbox(engine, DELIVERY, channel=CHANNEL)
    logouts.enqueue(Mail("logout_token", world.planner.id, {"sub": world.ana.id}))
    mail.enqueue(Mail("verify_email", world.ana.email, {}))
    first, second = mail.claim(), logouts.claim()
    assert first is not None and first.mail.kind == "verify_email"
    assert second is not None and second.mail.kind == "logout_token"
    assert mail.claim() is None and logouts.claim() is None


def test_one_client_endpoint_away_holds_up_no_other_clients_logout_token(world: World, engine: Engine) -> None:
    """Mail goes through one server, so a round stops at its first failure; each logout token goes to its own
    client's endpoint, so the round goes on."""
    logouts = Outbox(engine, DELIVERY, channel=CHANNEL, one_destination=False)
    away = logouts.enqueue(Mail("logout_token", world.planner.id, {"sub": world.ana.id}))
    logouts.enqueue(Mail("logout_token", world.companion.id, {"sub": world.ana.id}))
    posted: list[str] = []

    def post(claimed: Claimed) -> None:
        if claimed.id == away:
            raise ConnectionRefusedError("the planner's endpoint is away")
        posted.append(claimed.mail.recipient)

    assert logouts.deliver(post) == {"sent": 1, "retrying": 1, "failed": 0}
    assert posted == [world.companion.id]
