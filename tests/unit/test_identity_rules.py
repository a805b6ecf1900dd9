"""The sign-in and token rules of ``identity/``, one at a time, without any web framework."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote_plus

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.accounts.organizations import OrganizationStore
from identity.accounts.users import UserStore
from identity.clients.client_auth import ClientAuthenticator, decode_basic
from identity.clients.consents import ConsentStore
from identity.clients.metadata import check_redirect_uri, redirect_uri_matches
from identity.clients.registry import ClientStore
from identity.common.clock import SYSTEM_CLOCK, new_id
from identity.common.errors import (
    ErrorPage,
    InvalidClient,
    InvalidGrant,
    InvalidInput,
    InvalidRequest,
    InvalidScope,
    RequestNotSupported,
    UnauthorizedClient,
    UnsupportedResponseType,
)
from identity.common.issuer import Issuer
from identity.common.tables import authorization_codes, browser_sessions, session_clients
from identity.interaction.authorization_request import RedirectableError, parse_request, redirect_with
from identity.interaction.store import new_interaction
from identity.keys.sealing import Sealer, new_key
from identity.keys.signing_keys import SigningKeys
from identity.sessions.sessions import SessionStore
from identity.tokens.codes import CodeGrant, CodeStore
from identity.tokens.granted import Granted
from identity.tokens.grants.refresh_token import RefreshTokenGrant
from identity.tokens.pkce import challenge_of, verifies
from identity.tokens.refresh_tokens import RefreshTokenStore
from identity.tokens.revoked_grants import Revoker
from identity.tokens.token_endpoint import single_values
from tests.support.clocks import FixedClock, MovableClock
from tests.support.defaults import CODE_LIFETIME, SIGNING_KEYS_MAX_AGE
from tests.support.passwords import FAST_HASHING
from tests.support.token_services import token_services

ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


REDIRECT = "https://app.example.com/callback"
VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"  # RFC 7636 Appendix B


@pytest.fixture
def org(engine: Engine):  # type: ignore[no-untyped-def]
    return OrganizationStore(engine).create("Acme Foods")


@pytest.fixture
def clients(engine: Engine) -> ClientStore:
    return ClientStore(engine)


@pytest.fixture
def client(clients: ClientStore, org):  # type: ignore[no-untyped-def]
    return clients.create(name="App", org_id=org.id, auth_method="client_secret_basic", redirect_uris=[REDIRECT])


def authorization(client: str, **changes: str | None) -> list[tuple[str, str]]:
    params: dict[str, str | None] = {
        "response_type": "code",
        "client_id": client,
        "redirect_uri": REDIRECT,
        "scope": "openid profile",
        "state": "s1",
        "code_challenge": CHALLENGE,
        "code_challenge_method": "S256",
    }
    params.update(changes)
    return [(name, value) for name, value in params.items() if value is not None]


# PKCE (RFC 7636)


def test_s256_challenge_matches_rfc_7636_appendix_b() -> None:
    assert challenge_of(VERIFIER) == CHALLENGE
    assert verifies(VERIFIER, CHALLENGE)


@pytest.mark.parametrize("verifier", ["short", VERIFIER + "!", "a" * 129, VERIFIER[:-1] + "x"])
def test_malformed_or_wrong_verifier_does_not_verify(verifier: str) -> None:
    assert not verifies(verifier, CHALLENGE)


# The authorization request: checks in order


def test_request_checks_pass_for_a_valid_request(client, clients: ClientStore) -> None:  # type: ignore[no-untyped-def]
    request, found = parse_request(authorization(client[0].id, nonce="n1", max_age="60"), clients)
    assert found.id == client[0].id
    assert (request.scope, request.nonce, request.max_age, request.code_challenge) == (
        ("openid", "profile"),
        "n1",
        60,
        CHALLENGE,
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"client_id": None},
        {"client_id": "cli_unknown"},
        {"redirect_uri": None},
        {"redirect_uri": REDIRECT + "/"},
        {"redirect_uri": "https://app.example.com/call"},
        {"redirect_uri": REDIRECT + "?x=1"},
    ],
)
def test_errors_before_the_redirect_uri_is_trusted_are_pages(client, clients, changes) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ErrorPage):
        parse_request(authorization(client[0].id, **changes), clients)


def test_repeated_client_id_is_a_page_not_a_redirect(client, clients) -> None:  # type: ignore[no-untyped-def]
    pairs = authorization(client[0].id) + [("client_id", client[0].id)]
    with pytest.raises(ErrorPage):
        parse_request(pairs, clients)


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"response_type": None}, InvalidRequest),
        ({"response_type": "token"}, UnsupportedResponseType),
        ({"response_mode": "fragment"}, InvalidRequest),
        ({"scope": "profile email"}, InvalidScope),
        ({"code_challenge": None, "code_challenge_method": None}, InvalidRequest),
        ({"code_challenge_method": "plain"}, InvalidRequest),
        ({"code_challenge_method": None}, InvalidRequest),
        ({"code_challenge": None}, InvalidRequest),
        ({"code_challenge": "too-short"}, InvalidRequest),
        ({"prompt": "none login"}, InvalidRequest),
        ({"prompt": "sometimes"}, InvalidRequest),
        ({"max_age": "-1"}, InvalidRequest),
        ({"max_age": "٣"}, InvalidRequest),
        ({"request": "eyJ..."}, RequestNotSupported),
    ],
)
def test_errors_after_the_redirect_uri_is_trusted_redirect(client, clients, changes, error) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RedirectableError) as raised:
        parse_request(authorization(client[0].id, **changes), clients)
    assert isinstance(raised.value.error, error)
    assert (raised.value.redirect_uri, raised.value.state) == (REDIRECT, "s1")


def test_repeated_parameter_is_invalid_request_and_state_is_not_guessed(client, clients) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RedirectableError) as raised:
        parse_request(authorization(client[0].id) + [("state", "s2")], clients)
    assert isinstance(raised.value.error, InvalidRequest) and raised.value.state is None


def test_unknown_parameters_are_ignored_even_when_repeated(client, clients) -> None:  # type: ignore[no-untyped-def]
    parse_request(authorization(client[0].id) + [("x-extra", "1"), ("x-extra", "2")], clients)


def test_unknown_and_application_scopes_are_dropped(client, clients) -> None:  # type: ignore[no-untyped-def]
    request, _ = parse_request(authorization(client[0].id, scope="openid members:read telepathy email"), clients)
    assert request.scope == ("openid", "email")


def test_client_without_the_code_grant_is_unauthorized(clients: ClientStore, org) -> None:  # type: ignore[no-untyped-def]
    service, _ = clients.create(
        name="Svc",
        org_id=org.id,
        auth_method="client_secret_basic",
        redirect_uris=[REDIRECT],
        grants=["client_credentials"],
    )
    with pytest.raises(RedirectableError) as raised:
        parse_request(authorization(service.id), clients)
    assert isinstance(raised.value.error, UnauthorizedClient)


def test_client_with_optional_pkce_may_omit_it_but_never_use_plain(clients: ClientStore, org) -> None:  # type: ignore[no-untyped-def]
    legacy, _ = clients.create(
        name="Legacy", org_id=org.id, auth_method="client_secret_basic", redirect_uris=[REDIRECT], pkce_required=False
    )
    request, _ = parse_request(authorization(legacy.id, code_challenge=None, code_challenge_method=None), clients)
    assert request.code_challenge is None
    with pytest.raises(RedirectableError):
        parse_request(authorization(legacy.id, code_challenge_method="plain"), clients)


def test_response_parameters_keep_the_redirect_uris_own_query() -> None:
    location = redirect_with("https://app.example.com/cb?tenant=a", {"code": "c", "state": None, "iss": "https://i"})
    assert location == "https://app.example.com/cb?tenant=a&code=c&iss=https%3A%2F%2Fi"


# Codes: single use, 60 seconds


def issue_code(codes: CodeStore, client_id: str, nonce: str | None = None) -> str:
    return codes.record(
        CodeGrant(
            grant_id=new_id("grt"),
            client_id=client_id,
            redirect_uri=REDIRECT,
            user_id="usr_1",
            org_id="org_1",
            session_id="ses_1",
            scope=("openid",),
            nonce=nonce,
            code_challenge=CHALLENGE,
            auth_time=SYSTEM_CLOCK.now(),
            credential_version=0,
        )
    )


def test_code_is_stored_only_as_a_hash(engine: Engine) -> None:
    code = issue_code(CodeStore(engine, CODE_LIFETIME), "cli_1")
    with engine.connect() as connection:
        stored = connection.scalar(sa.select(authorization_codes.c.code_hash))
    assert stored != code and code not in str(stored)


def test_code_is_consumed_once_and_a_second_use_reports_the_replay(engine: Engine) -> None:
    codes = CodeStore(engine, CODE_LIFETIME)
    code = issue_code(codes, "cli_1")
    first = codes.consume(code, "cli_1")
    second = codes.consume(code, "cli_1")
    assert first.grant is not None and first.replayed is None
    assert second.grant is None and second.replayed == first.grant.grant_id


def test_a_consumed_code_gives_back_the_grant_it_was_issued_for_nonce_included(engine: Engine) -> None:
    """OpenID Connect Core §3.1.3.6: the ID token of the exchange carries the authorization request's nonce, which
    only the code's record holds."""
    codes = CodeStore(engine, CODE_LIFETIME)
    grant = codes.consume(issue_code(codes, "cli_1", nonce="n-0S6_WzA2Mj"), "cli_1").grant
    assert grant is not None
    assert (grant.nonce, grant.redirect_uri, grant.code_challenge, grant.scope) == (
        "n-0S6_WzA2Mj", REDIRECT, CHALLENGE, ("openid",),
    )  # fmt: skip
    assert (grant.client_id, grant.user_id, grant.org_id, grant.session_id) == ("cli_1", "usr_1", "org_1", "ses_1")


def test_expired_code_is_refused_without_reporting_a_replay(engine: Engine) -> None:
    clock = MovableClock()
    codes = CodeStore(engine, CODE_LIFETIME, clock)
    code = issue_code(codes, "cli_1")
    clock.advance(61)
    consumed = codes.consume(code, "cli_1")
    assert consumed.grant is None and consumed.replayed is None


def test_unknown_code_is_refused(engine: Engine) -> None:
    assert CodeStore(engine, CODE_LIFETIME).consume("nonsense", "cli_1").grant is None


def test_another_clients_attempt_neither_uses_up_the_code_nor_reports_a_replay(engine: Engine) -> None:
    codes = CodeStore(engine, CODE_LIFETIME)
    code = issue_code(codes, "cli_1")
    stolen = codes.consume(code, "cli_thief")
    assert stolen.grant is None and stolen.replayed is None
    assert codes.consume(code, "cli_1").grant is not None


def test_replayed_code_racing_the_exchange_still_revokes_what_the_exchange_issued(engine: Engine) -> None:
    revoker = Revoker(engine)
    revoker.revoke_grant("grt_1")  # the replay's revocation ran before the exchange issued anything
    assert revoker.revoked("grt_1") and not revoker.revoked("grt_2")


# Sessions


def test_signing_in_again_as_the_same_user_renews_the_session_with_a_new_secret(engine: Engine, org) -> None:  # type: ignore[no-untyped-def]
    user = UserStore(engine, hashing=FAST_HASHING).create("ana@example.com", "Ana", "password-123", [(org.id, "owner")])
    sessions = SessionStore(engine, timedelta(hours=1))
    first, first_secret = sessions.start(user.id, None, user.credential_version)
    second, second_secret = sessions.start(user.id, None, user.credential_version, replacing=first_secret)
    assert first.id == second.id and first_secret != second_secret
    assert second.auth_time >= first.auth_time
    assert sessions.current(first_secret) is None
    assert sessions.current(second_secret) == second
    assert not sessions.ended(first.id)
    with engine.connect() as connection:
        hashes = list(connection.scalars(sa.select(browser_sessions.c.secret_hash)))
    assert first_secret not in hashes and second_secret not in hashes


def test_signing_in_as_someone_else_ends_the_browsers_previous_session(engine: Engine, org) -> None:  # type: ignore[no-untyped-def]
    users = UserStore(engine, hashing=FAST_HASHING)
    ana = users.create("ana@example.com", "Ana", "password-123", [(org.id, "owner")])
    bo = users.create("bo@example.com", "Bo", "password-123", [(org.id, "member")])
    sessions = SessionStore(engine, timedelta(hours=1))
    first, first_secret = sessions.start(ana.id, None, ana.credential_version)
    second, second_secret = sessions.start(bo.id, None, bo.credential_version, replacing=first_secret)
    assert first.id != second.id
    assert sessions.ended(first.id) and sessions.current(first_secret) is None
    assert sessions.current(second_secret) == second


def test_ended_session_is_no_longer_current(engine: Engine, org) -> None:  # type: ignore[no-untyped-def]
    user = UserStore(engine, hashing=FAST_HASHING).create("ana@example.com", "Ana", "password-123", [(org.id, "owner")])
    sessions = SessionStore(engine, timedelta(hours=1))
    session, secret = sessions.start(user.id, org.id, user.credential_version)
    assert sessions.end(session.id) and not sessions.end(session.id)
    assert sessions.current(secret) is None and sessions.get(session.id) is None


# Interactions


def test_interaction_belongs_only_to_the_browser_that_started_it(client, clients) -> None:  # type: ignore[no-untyped-def]
    request, _ = parse_request(authorization(client[0].id), clients)
    interaction = new_interaction(request, "browser-secret", SYSTEM_CLOCK.now() + timedelta(minutes=5))
    assert interaction.belongs_to("browser-secret")
    assert not interaction.belongs_to("another-browser") and not interaction.belongs_to(None)
    assert interaction.csrf_matches(interaction.csrf_token) and not interaction.csrf_matches("forged")


# Consents


def test_consent_covers_only_the_scopes_allowed(engine: Engine, client, org) -> None:  # type: ignore[no-untyped-def]
    user = UserStore(engine, hashing=FAST_HASHING).create("ana@example.com", "Ana", "password-123", [(org.id, "owner")])
    consents = ConsentStore(engine)
    assert not consents.covers(user.id, client[0].id, org.id, ["openid"])
    consents.grant(user.id, client[0].id, org.id, ["openid", "profile"])
    assert consents.covers(user.id, client[0].id, org.id, ["openid"])
    assert not consents.covers(user.id, client[0].id, org.id, ["openid", "email"])
    consents.grant(user.id, client[0].id, org.id, ["email"])
    assert consents.covers(user.id, client[0].id, org.id, ["openid", "profile", "email"])


def test_consent_is_given_per_organization(engine: Engine, client, org) -> None:  # type: ignore[no-untyped-def]
    other = OrganizationStore(engine).create("Blue Harbor")
    user = UserStore(engine, hashing=FAST_HASHING).create(
        "ana@example.com", "Ana", "password-123", [(org.id, "owner"), (other.id, "admin")]
    )
    consents = ConsentStore(engine)
    consents.grant(user.id, client[0].id, org.id, ["openid", "profile"])
    assert consents.covers(user.id, client[0].id, org.id, ["openid"])
    assert not consents.covers(user.id, client[0].id, other.id, ["openid"])


# Throttling: tests/api/test_sign_in_throttle.py


# Client authentication and token requests


def test_basic_credentials_are_form_decoded() -> None:
    header = "Basic " + base64.b64encode(f"{quote_plus('cli:1')}:{quote_plus('s3cr3t /+%')}".encode()).decode()
    assert decode_basic(header) == ("cli:1", "s3cr3t /+%")


@pytest.mark.parametrize("header", ["Basic !!!", "Basic " + base64.b64encode(b"no-colon").decode()])
def test_malformed_basic_credentials_are_invalid_client(header: str) -> None:
    with pytest.raises(InvalidClient):
        decode_basic(header)


def test_a_client_secret_post_client_may_use_basic_too_and_a_basic_one_never_the_body(  # type: ignore[no-untyped-def]
    engine: Engine, clients: ClientStore, org
) -> None:
    """RFC 6749 §2.3.1: Basic from every client that holds a secret; the body's secret only where registered."""
    poster, secret = clients.create(
        name="Poster", org_id=org.id, auth_method="client_secret_post", grants=["client_credentials"]
    )
    assert secret is not None
    authenticator = ClientAuthenticator(engine, clients, Issuer("http://127.0.0.1:8000"))
    basic = "Basic " + base64.b64encode(f"{poster.id}:{secret}".encode()).decode()
    assert authenticator.authenticate({}, basic).id == poster.id
    assert authenticator.authenticate({"client_id": poster.id, "client_secret": secret}, None).id == poster.id
    with pytest.raises(InvalidClient):
        authenticator.authenticate({}, "Basic " + base64.b64encode(f"{poster.id}:wrong".encode()).decode())
    with pytest.raises(InvalidRequest):
        authenticator.authenticate({"client_id": poster.id, "client_secret": secret}, basic)


def test_client_may_use_only_its_registered_method(engine: Engine, client, clients) -> None:  # type: ignore[no-untyped-def]
    registered, secret = client
    authenticator = ClientAuthenticator(engine, clients, Issuer("http://127.0.0.1:8000"))
    basic = "Basic " + base64.b64encode(f"{registered.id}:{secret}".encode()).decode()
    assert authenticator.authenticate({}, basic).id == registered.id
    with pytest.raises(InvalidClient):
        authenticator.authenticate({"client_id": registered.id, "client_secret": secret}, None)
    with pytest.raises(InvalidRequest):
        authenticator.authenticate({"client_id": registered.id, "client_secret": secret}, basic)
    with pytest.raises(InvalidClient):
        authenticator.authenticate({}, None)


def test_a_rotated_secret_keeps_working_for_its_grace_and_not_a_moment_longer(engine: Engine, org) -> None:  # type: ignore[no-untyped-def]
    """A rotation with a grace (the console's, the management API's): the previous secret authenticates until the
    grace ends, by the authenticator's clock; the new one at once."""
    clock = MovableClock()
    clock.hold()
    clients = ClientStore(engine, clock)
    registered, old = clients.create(
        name="App", org_id=org.id, auth_method="client_secret_basic", redirect_uris=[REDIRECT]
    )
    assert old is not None
    new = clients.new_secret(registered.id, grace=timedelta(hours=1))
    authenticator = ClientAuthenticator(engine, clients, Issuer("http://127.0.0.1:8000"), clock)

    def basic(secret: str) -> str:
        return "Basic " + base64.b64encode(f"{registered.id}:{secret}".encode()).decode()

    clock.advance(3599)
    assert authenticator.authenticate({}, basic(old)).id == authenticator.authenticate({}, basic(new)).id
    clock.advance(1)
    with pytest.raises(InvalidClient):
        authenticator.authenticate({}, basic(old))
    assert authenticator.authenticate({}, basic(new)).id == registered.id


def test_repeated_token_parameter_is_invalid_request_and_empty_ones_are_omitted() -> None:
    assert single_values([("grant_type", "x"), ("scope", "")]) == {"grant_type": "x"}
    with pytest.raises(InvalidRequest):
        single_values([("code", "a"), ("code", "b")])


# The issuer


def test_issuer_path_scopes_every_url_and_cookie() -> None:
    issuer = Issuer("https://id.example.com/tenant-a")
    assert issuer.path == "/tenant-a" and issuer.cookie_path == "/tenant-a" and issuer.secure
    assert issuer.endpoint("/oauth2/token") == "https://id.example.com/tenant-a/oauth2/token"
    assert Issuer("http://127.0.0.1:8000").path == "" and Issuer("http://127.0.0.1:8000").cookie_path == "/"


@pytest.mark.parametrize("url", ["ftp://x", "https://id.example.com/", "https://id.example.com?a=1", "id.example.com"])
def test_issuer_must_be_an_http_url_without_trailing_slash_query_or_fragment(url: str) -> None:
    with pytest.raises(ValueError):
        Issuer(url)


def test_a_state_too_long_is_refused_and_not_echoed(client, clients) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RedirectableError) as raised:
        parse_request(authorization(client[0].id, state="s" * 2049), clients)
    assert isinstance(raised.value.error, InvalidRequest) and raised.value.state is None


class ReadBeforeTheRace(RefreshTokenStore):
    """A store whose first read answers the record as it was before another request rotated it."""

    def __init__(self, engine: Engine, stale: Any) -> None:
        super().__init__(engine)
        self._stale = [stale]

    def find(self, token: str) -> Any:
        return self._stale.pop() if self._stale else super().find(token)


def test_refresh_token_reuse_racing_its_rotation_still_revokes_the_family(engine: Engine, client, org) -> None:  # type: ignore[no-untyped-def]
    user = UserStore(engine, hashing=FAST_HASHING).create("ana@example.com", "Ana", "password-123", [(org.id, "owner")])
    session, _ = SessionStore(engine, timedelta(hours=1)).start(user.id, org.id, user.credential_version)
    keys = SigningKeys(
        engine, timedelta(0), timedelta(minutes=10), sealer=Sealer([new_key()]), max_age=SIGNING_KEYS_MAX_AGE
    )
    keys.ensure()
    tokens = token_services(engine, keys)
    store = tokens.refresh_tokens
    token = tokens.minter.refresh_token(
        Granted(
            grant_id="grt_1", client_id=client[0].id, user_id=user.id, org_id=org.id, session_id=session.id,
            scope=("openid", "offline_access"), auth_time=SYSTEM_CLOCK.now(),
            credential_version=user.credential_version,
        )
    )  # fmt: skip
    stale = store.find(token)
    assert stale is not None and store.rotate(stale)  # the other request wins the rotation...
    grant = RefreshTokenGrant(
        ReadBeforeTheRace(engine, stale),  # ...after we read it
        tokens.minter,
        tokens.revoker,
        UserStore(engine, hashing=FAST_HASHING),
        SessionStore(engine, timedelta(hours=1)),
    )

    with pytest.raises(InvalidGrant, match="already used"):
        grant.exchange(client[0], {"refresh_token": token})
    assert tokens.revoker.revoked("grt_1")


def minted_refresh_token(
    engine: Engine, client, org, clock: MovableClock | FixedClock
) -> tuple[RefreshTokenStore, str]:  # type: ignore[no-untyped-def]
    """A live refresh token of the family ``grt_1``, living a minute on ``clock``, and its store."""
    user = UserStore(engine, hashing=FAST_HASHING).create("ana@example.com", "Ana", "password-123", [(org.id, "owner")])
    session, _ = SessionStore(engine, timedelta(hours=1)).start(user.id, org.id, user.credential_version)
    keys = SigningKeys(
        engine, timedelta(0), timedelta(minutes=10), sealer=Sealer([new_key()]), max_age=SIGNING_KEYS_MAX_AGE
    )
    keys.ensure()
    tokens = token_services(engine, keys, clock)
    granted = Granted(
        grant_id="grt_1", client_id=client[0].id, user_id=user.id, org_id=org.id, session_id=session.id,
        scope=("openid", "offline_access"), auth_time=clock.now(), credential_version=user.credential_version,
    )  # fmt: skip
    return tokens.refresh_tokens, tokens.minter.refresh_token(granted, expires_at=clock.now() + timedelta(minutes=1))


def test_a_refresh_token_revoked_after_it_was_read_does_not_rotate(engine: Engine, client, org) -> None:  # type: ignore[no-untyped-def]
    """RFC 9700 §4.14.2: the rotation is one statement that checks the token is still live when it runs, not only
    when it was read: a revocation in between (another request's reuse detection, a sign-out) wins."""
    clock = MovableClock()
    store, token = minted_refresh_token(engine, client, org, clock)
    read = store.find(token)
    assert read is not None and read.live(clock.now())
    with engine.begin() as connection:
        RefreshTokenStore.revoke_grant(connection, "grt_1", clock.now())
    assert not store.rotate(read)


def test_a_refresh_token_expired_after_it_was_read_does_not_rotate(engine: Engine, client, org) -> None:  # type: ignore[no-untyped-def]
    clock = MovableClock()
    store, token = minted_refresh_token(engine, client, org, clock)
    read = store.find(token)
    assert read is not None
    clock.advance(61)
    assert not store.rotate(read)
    clock.advance(-61)  # the same token, still live: the refusals above are of its state, not of the record
    assert store.rotate(read)


def test_a_refresh_token_does_not_rotate_at_the_instant_it_expires(engine: Engine, client, org) -> None:  # type: ignore[no-untyped-def]
    """Live means before ``expires_at``, not at it (the same rule as ``RefreshToken.live``)."""
    minted = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
    store, token = minted_refresh_token(engine, client, org, FixedClock(minted))
    read = store.find(token)
    assert read is not None and read.expires_at == minted + timedelta(minutes=1)
    assert not RefreshTokenStore(engine, FixedClock(read.expires_at)).rotate(read)
    assert RefreshTokenStore(engine, FixedClock(read.expires_at - timedelta(seconds=1))).rotate(read)


def test_spending_a_code_leaves_the_clients_other_codes_unspent(engine: Engine) -> None:
    codes = CodeStore(engine, CODE_LIFETIME)
    first, second = issue_code(codes, "cli_1"), issue_code(codes, "cli_1")
    assert codes.consume(first, "cli_1").grant is not None
    assert codes.consume(second, "cli_1").grant is not None


def test_only_the_exchange_that_spends_a_code_makes_its_client_a_holder_of_the_session(engine: Engine) -> None:
    """Back-Channel Logout: a client holds a session once it redeemed a code of it; another client's attempt or
    a replay records nothing."""
    codes = CodeStore(engine, CODE_LIFETIME)
    code = issue_code(codes, "cli_1")

    def holders() -> list[tuple[str, str]]:
        with engine.connect() as connection:
            rows = connection.execute(sa.select(session_clients.c.session_id, session_clients.c.client_id))
            return [tuple(row) for row in rows]

    codes.consume(code, "cli_thief")
    assert holders() == []
    codes.consume(code, "cli_1")
    assert holders() == [("ses_1", "cli_1")]


@pytest.mark.parametrize("redirect_uri", [None, "https://elsewhere.example/cb"], ids=["missing", "unregistered"])
def test_an_unregistered_redirect_uri_is_a_page_that_says_so(client, clients, redirect_uri) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ErrorPage) as page:
        parse_request(authorization(client[0].id, redirect_uri=redirect_uri), clients)
    assert page.value.title == "Unregistered redirect URI"
    assert page.value.description == (
        "The sign-in request's redirect_uri is missing or is not registered for this application."
    )


@pytest.mark.parametrize(
    ("registered", "presented", "matches"),
    [
        ("https://app.example/cb", "https://app.example/cb", True),
        ("https://app.example/cb", "https://app.example/cb/", False),
        ("https://app.example/cb", "https://app.example:8443/cb", False),
        ("http://127.0.0.1/cb", "http://127.0.0.1:51234/cb", True),  # RFC 8252 §7.3: a loopback port may differ
        ("http://127.0.0.1/cb", "http://127.0.0.1:51234/other", False),
        ("http://[::1]/cb", "http://[::1]:8080/cb", True),
    ],
)
def test_redirect_uris_match_exactly_but_for_a_loopback_port(registered: str, presented: str, matches: bool) -> None:
    assert redirect_uri_matches(registered, presented) is matches


def test_basic_credentials_split_at_the_first_colon() -> None:
    """RFC 7617 §2: the user-id cannot contain a colon, the password may (sent unencoded by lax clients)."""
    assert decode_basic("Basic " + base64.b64encode(b"cli_1:se:cret").decode()) == ("cli_1", "se:cret")


def test_basic_credentials_with_a_character_outside_base64_are_invalid_client() -> None:
    """Strict base64: a decoder that skipped the stray character would read the right id and secret."""
    encoded = base64.b64encode(b"cli_1:secret").decode()
    with pytest.raises(InvalidClient):
        decode_basic("Basic " + encoded[:4] + "*" + encoded[4:])


@pytest.mark.parametrize(
    ("header", "detail"),
    [
        ("Basic !!!", "The Basic credentials are not base64 of UTF-8 text."),
        ("Basic " + base64.b64encode(b"\xff\xfe:x").decode(), "The Basic credentials are not base64 of UTF-8 text."),
        ("Basic " + base64.b64encode(b"no-colon").decode(), "The Basic credentials have no ':' between id and secret."),
        ("Basic " + base64.b64encode(b"cli%00:x").decode(), "The Basic credentials' id holds a control character."),
    ],
)
def test_each_malformed_basic_header_logs_its_own_reason(header: str, detail: str) -> None:
    """The answer is the same invalid_client for every refusal; the detail, written to the log only, tells the
    operator which rule refused it."""
    with pytest.raises(InvalidClient) as raised:
        decode_basic(header)
    assert raised.value.detail == detail


def test_each_refused_client_secret_logs_its_own_reason(  # type: ignore[no-untyped-def]
    engine: Engine, clients: ClientStore, client, org
) -> None:
    registered, secret = client
    public, _ = clients.create(
        name="Public",
        org_id=org.id,
        auth_method="none",
        grants=["authorization_code"],
        redirect_uris=["https://app.example/cb"],
    )
    authenticator = ClientAuthenticator(engine, clients, Issuer("http://127.0.0.1:8000"))

    def detail(client_id: str, client_secret: str) -> str:
        basic = "Basic " + base64.b64encode(f"{client_id}:{client_secret}".encode()).decode()
        with pytest.raises(InvalidClient) as raised:
            authenticator.authenticate({}, basic)
        return raised.value.detail

    assert detail(registered.id, "wrong") == f"The secret of client {registered.id} is wrong."
    assert detail("cli_0000000000000000", secret) == "No client has the id 'cli_0000000000000000'."
    assert detail("x" * 65, secret) == f"No client has the id {'x' * 64!r}."
    assert detail(public.id, "anything") == (
        f"Client {public.id} is registered for none, not client_secret_basic or client_secret_post."
    )


@pytest.mark.parametrize(
    "uri", [" https://app.example/cb", "https://app.example/cb ", "https://app.example/" + "x" * 1990]
)
def test_a_redirect_uri_with_surrounding_blanks_or_over_2000_characters_is_not_registered(uri: str) -> None:
    with pytest.raises(InvalidInput, match="must be absolute and have no fragment"):
        check_redirect_uri(uri)


def test_a_redirect_uri_of_2000_characters_is_registered_and_one_of_2001_is_not() -> None:
    longest = "https://app.example/" + "x" * 1980
    assert len(longest) == 2000 and check_redirect_uri(longest) == longest
    with pytest.raises(InvalidInput, match="must be absolute"):
        check_redirect_uri(longest + "x")


def test_a_redirect_uri_that_is_no_uri_is_refused_saying_so() -> None:
    with pytest.raises(InvalidInput, match=r"redirect URI 'https://\[::1/cb' is not a URI"):
        check_redirect_uri("https://[::1/cb")


@pytest.mark.parametrize("uri", ["myapp:/callback", "myapp://callback", "ftp://app.example/cb"])
def test_a_private_use_scheme_is_registered_only_in_reverse_domain_form(uri: str) -> None:
    """RFC 8252 §7.1: a private-use scheme is a reverse domain name (``com.example.app``): one without a dot, or
    another protocol's, is refused."""
    assert check_redirect_uri("com.example.app:/callback") == "com.example.app:/callback"
    with pytest.raises(InvalidInput, match="must use https"):
        check_redirect_uri(uri)
