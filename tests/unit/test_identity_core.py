"""The identity provider's core, without any web framework: organizations, users, clients, keys."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import jwt
import pytest
import sqlalchemy as sa
from argon2 import PasswordHasher
from sqlalchemy.engine import Engine

from identity.accounts.organizations import OrganizationStore
from identity.accounts.passwords import DUMMY_PASSWORD, OWASP_ARGON2ID
from identity.accounts.users import UserStore
from identity.clients.metadata import check_redirect_uri
from identity.clients.registry import ClientStore
from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.errors import InvalidClient, InvalidInput, InvalidToken, UnknownRecord
from identity.common.tables import clients, users
from identity.keys.sealing import Sealer, new_key
from identity.keys.signing_keys import SigningKeys
from identity.tokens.access_tokens import AccessTokenStore
from tests.support.clocks import MovableClock
from tests.support.defaults import SIGNING_KEYS_MAX_AGE
from tests.support.identity_fixtures import PASSWORD
from tests.support.passwords import FAST_HASHING
from tests.support.token_services import token_services

ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


@pytest.fixture
def org(engine: Engine):  # type: ignore[no-untyped-def]
    return OrganizationStore(engine).create("Acme Foods")


def test_organization_slugs_are_unique(engine: Engine) -> None:
    store = OrganizationStore(engine)
    assert [store.create("Café Crème").slug for _ in range(3)] == ["cafe-creme", "cafe-creme-2", "cafe-creme-3"]


def test_user_password_is_stored_as_argon2id_hash(engine: Engine, org) -> None:  # type: ignore[no-untyped-def]
    """A store made without a hashing (as the service makes it) hashes at OWASP's parameters."""
    users_ = UserStore(engine)
    user = users_.create("ana@example.com", "Ana", PASSWORD, [(org.id, "owner")])
    with engine.connect() as connection:
        stored = connection.scalar(sa.select(users.c.password_hash).where(users.c.id == user.id))
    assert stored.startswith("$argon2id$v=19$m=19456,t=2,p=1$") and PASSWORD not in stored
    assert OWASP_ARGON2ID.verify(stored, PASSWORD) and users_.authenticate(user.email, PASSWORD) == user


def test_an_unknown_account_costs_one_verification_at_the_production_parameters() -> None:
    """The dummy hash verified against when no account has the e-mail is written out in identity/accounts/passwords.py,
    not computed at import: it must be of the hasher's own parameters, so that the work is the same either way."""
    hasher = OWASP_ARGON2ID.hasher
    assert isinstance(hasher, PasswordHasher)
    assert hasher.verify(OWASP_ARGON2ID.dummy_hash, DUMMY_PASSWORD)
    assert not hasher.check_needs_rehash(OWASP_ARGON2ID.dummy_hash)


def test_email_is_unique_without_regard_to_case(engine: Engine, org) -> None:  # type: ignore[no-untyped-def]
    store = UserStore(engine, hashing=FAST_HASHING)
    store.create("Ana@Example.com", "Ana", PASSWORD, [(org.id, "member")])
    with pytest.raises(InvalidInput, match="already exists"):
        store.create("ana@example.COM", "Other Ana", PASSWORD, [(org.id, "member")])


def test_authenticate_compares_email_without_regard_to_case(engine: Engine, org) -> None:  # type: ignore[no-untyped-def]
    store = UserStore(engine, hashing=FAST_HASHING)
    created = store.create("Ana@Example.com", "Ana", PASSWORD, [(org.id, "member")])
    assert store.authenticate("ANA@example.com", PASSWORD) == created
    assert store.authenticate("ana@example.com", "wrong password") is None
    assert store.authenticate("nobody@example.com", PASSWORD) is None


def test_user_belongs_to_at_least_one_existing_organization(engine: Engine) -> None:
    store = UserStore(engine, hashing=FAST_HASHING)
    with pytest.raises(InvalidInput, match="at least one organization"):
        store.create("ana@example.com", "Ana", PASSWORD, [])
    with pytest.raises(InvalidInput, match="no organization has the id"):
        store.create("ana@example.com", "Ana", PASSWORD, [("org_missing", "member")])
    assert store.list() == []


def test_weak_password_is_refused(engine: Engine, org) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInput, match="8 to 1024 characters"):
        UserStore(engine, hashing=FAST_HASHING).create("ana@example.com", "Ana", "short", [(org.id, "member")])


def test_sign_up_creates_user_and_owned_organization(engine: Engine) -> None:
    user = UserStore(engine, hashing=FAST_HASHING).sign_up("bo@example.com", "Bo", PASSWORD, "Bo's Bakery")
    assert [(m.org.name, m.role) for m in user.memberships] == [("Bo's Bakery", "owner")]


def test_sign_up_with_a_taken_email_creates_no_organization(engine: Engine, org) -> None:  # type: ignore[no-untyped-def]
    store = UserStore(engine, hashing=FAST_HASHING)
    store.create("bo@example.com", "Bo", PASSWORD, [(org.id, "member")])
    with pytest.raises(InvalidInput):
        store.sign_up("BO@example.com", "Bo", PASSWORD, "Second Org")
    assert [o.name for o in OrganizationStore(engine).list()] == ["Acme Foods"]


def test_client_secret_is_stored_only_as_hash_and_verifies(engine: Engine, org) -> None:  # type: ignore[no-untyped-def]
    client, secret = ClientStore(engine).create(
        name="Web", org_id=org.id, auth_method="client_secret_basic", redirect_uris=["https://app.example/cb"]
    )
    assert secret and secret.startswith("cs_")
    with engine.connect() as connection:
        row = connection.execute(sa.select(clients).where(clients.c.id == client.id)).one()
    assert secret not in str(tuple(row))
    stored = ClientStore(engine).get(client.id)
    assert stored and stored.verify_secret(secret) and not stored.verify_secret(secret + "x")


def test_private_key_jwt_client_has_jwks_and_no_secret(engine: Engine, org) -> None:  # type: ignore[no-untyped-def]
    jwks = {"keys": [{"kty": "RSA", "n": "abc", "e": "AQAB", "kid": "k1"}]}
    client, secret = ClientStore(engine).create(
        name="Server", org_id=org.id, auth_method="private_key_jwt", grants=["client_credentials"], jwks=jwks
    )
    assert secret is None and client.jwks == jwks and client.scopes == ()  # no application scope unless asked


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"auth_method": "public"}, "auth method"),
        ({"auth_method": "none", "grants": ["authorization_code", "client_credentials"]}, "client_credentials"),
        ({"auth_method": "none", "pkce_required": False}, "must use PKCE"),
        ({"web_origins": ["https://app.example"]}, "only for public clients"),
        ({"auth_method": "none", "web_origins": ["https://app.example/"]}, "must be an origin"),
        ({"auth_method": "none", "web_origins": ["https://app.example/cb"]}, "not a URL"),
        ({"auth_method": "none", "web_origins": ["https://App.example"]}, "in lower case"),
        ({"auth_method": "none", "web_origins": ["https://app.example:99999"]}, "must be an origin"),
        ({"auth_method": "none", "web_origins": ["http://app.example"]}, "must use https"),
        ({"auth_method": "none", "web_origins": ["null"]}, "must be an origin"),
        ({"grants": ["implicit"]}, "unknown grant"),
        ({"scopes": ["admin"]}, "unknown scope"),
        ({"scopes": ["members:read"]}, "needs the client_credentials grant"),
        ({"redirect_uris": []}, "needs at least one redirect URI"),
        ({"redirect_uris": ["http://app.example/cb"]}, "must use https"),
        ({"redirect_uris": ["https://app.example/cb#frag"]}, "no fragment"),
        ({"auth_method": "private_key_jwt"}, "JWKS must be a JSON object"),
        (
            {"auth_method": "private_key_jwt", "jwks": {"keys": [{"kty": "RSA", "n": "a", "e": "AQAB", "d": "s"}]}},
            "contains a private key",
        ),
        ({"jwks": {"keys": [{"kty": "RSA", "n": "a", "e": "AQAB"}]}}, "only for the private_key_jwt"),
        ({"org_id": "org_missing"}, "no organization"),
    ],
)
def test_client_registration_refuses_bad_input(engine: Engine, org, changes: dict, message: str) -> None:  # type: ignore[no-untyped-def]
    arguments = {
        "name": "Web",
        "org_id": org.id,
        "auth_method": "client_secret_basic",
        "redirect_uris": ["https://app.example/cb"],
        **changes,
    }
    with pytest.raises(InvalidInput, match=message):
        ClientStore(engine).create(**arguments)
    assert ClientStore(engine).list() == []


@pytest.mark.parametrize("uri", ["https://app.example/cb", "http://127.0.0.1:5000/cb", "com.example.app:/callback"])
def test_redirect_uri_forms_allowed_by_rfc_8252(uri: str) -> None:
    assert check_redirect_uri(uri) == uri


def test_deleting_a_client_revokes_its_tokens(engine: Engine, org) -> None:  # type: ignore[no-untyped-def]
    store = ClientStore(engine)
    client, _ = store.create(
        name="Svc", org_id=org.id, auth_method="client_secret_basic", grants=["client_credentials"]
    )
    keys = SigningKeys(
        engine, timedelta(0), timedelta(minutes=10), sealer=Sealer([new_key()]), max_age=SIGNING_KEYS_MAX_AGE
    )
    keys.ensure()
    tokens = token_services(engine, keys)
    issued = tokens.minter.access_token(client_id=client.id, org=org, scope=("members:read",), user_id=None)
    assert tokens.verifier.verify_access_token(issued.token).client_id == client.id
    store.delete(client.id)
    with pytest.raises(InvalidToken):
        tokens.verifier.verify_access_token(issued.token)


def test_records_read_together_answer_the_verifications_of_their_units_of_work_from_one_statement(  # type: ignore[no-untyped-def]
    engine: Engine, org
) -> None:
    client, _ = ClientStore(engine).create(
        name="Svc", org_id=org.id, auth_method="client_secret_basic", grants=["client_credentials"]
    )
    tokens = token_services(engine, _keys_ensured(engine))
    live, revoked = (
        tokens.minter.access_token(client_id=client.id, org=org, scope=("members:read",), user_id=None).token
        for _ in range(2)
    )
    AccessTokenStore(engine).revoke(jwt.decode(revoked, options={"verify_signature": False})["jti"])
    reads: list[str] = []
    sa.event.listen(engine, "before_cursor_execute", lambda *call: reads.append(call[2]))

    def access_token_reads() -> int:
        return sum("FROM access_tokens" in statement for statement in reads)

    units = tokens.token_work.open([live, revoked, "not-a-token", None])
    assert len(units) == 4
    assert access_token_reads() == 1
    assert tokens.verifier.verify_access_token(live, units[0]).client_id == client.id
    with pytest.raises(InvalidToken, match="revoked"):
        tokens.verifier.verify_access_token(revoked, units[1])
    assert access_token_reads() == 1
    assert tokens.verifier.verify_access_token(live, units[2]).client_id == client.id  # the same token twice
    assert access_token_reads() == 1
    AccessTokenStore(engine).revoke(jwt.decode(live, options={"verify_signature": False})["jti"])
    with pytest.raises(InvalidToken, match="revoked"):  # read at its use, outside the block
        tokens.verifier.verify_access_token(live)


def test_one_token_introspected_by_several_calls_of_a_row_is_read_once_for_all(  # type: ignore[no-untyped-def]
    engine: Engine, org
) -> None:
    client, _ = ClientStore(engine).create(
        name="Svc", org_id=org.id, auth_method="client_secret_basic", grants=["client_credentials"]
    )
    tokens = token_services(engine, _keys_ensured(engine))
    live = tokens.minter.access_token(client_id=client.id, org=org, scope=("members:read",), user_id=None).token
    reads: list[str] = []
    sa.event.listen(engine, "before_cursor_execute", lambda *call: reads.append(call[2]))

    units = tokens.token_work.open([live] * 3)
    for unit in units:
        assert tokens.verifier.verify_access_token(live, unit).client_id == client.id
    assert sum("FROM access_tokens" in statement for statement in reads) == 1


def _keys_ensured(engine: Engine) -> SigningKeys:
    keys = SigningKeys(
        engine, timedelta(0), timedelta(minutes=10), sealer=Sealer([new_key()]), max_age=SIGNING_KEYS_MAX_AGE
    )
    keys.ensure()
    return keys


def _minting(engine: Engine) -> Any:
    keys = SigningKeys(
        engine, timedelta(0), timedelta(minutes=10), sealer=Sealer([new_key()]), max_age=SIGNING_KEYS_MAX_AGE
    )
    keys.ensure()
    return token_services(engine, keys).minter


@pytest.mark.parametrize("elsewhere", ["delete", "new_secret"])
def test_a_client_deleted_or_given_a_new_secret_elsewhere_gets_no_token_from_a_node_that_remembers_it(  # type: ignore[no-untyped-def]
    engine: Engine, org, elsewhere: str
) -> None:
    here = ClientStore(engine, recent_max_age=60)
    client, _ = here.create(name="Svc", org_id=org.id, auth_method="client_secret_basic", grants=["client_credentials"])
    assert here.recent(client.id) == client
    getattr(ClientStore(engine), elsewhere)(client.id)  # another node, or the command line
    assert here.recent(client.id) == client  # still remembered here, for at most recent_max_age
    with pytest.raises(InvalidClient):  # but the token's row is written only while the client holds that secret
        _minting(engine).access_token(
            client_id=client.id, org=org, scope=("members:read",), user_id=None, secret_hash=client.secret_hash
        )


def test_a_known_organization_is_read_once_and_an_unknown_one_every_time(engine: Engine) -> None:
    store = OrganizationStore(engine)
    org = store.create("Acme Foods")
    assert store.known(org.id) == org
    statements: list[str] = []
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    sa.event.listen(engine, "before_cursor_execute", listener)
    try:
        assert store.known(org.id) == org
        assert statements == []
        assert store.known("org_nobody") is None and store.known("org_nobody") is None
        assert len(statements) == 2
    finally:
        sa.event.remove(engine, "before_cursor_execute", listener)


def test_a_client_changed_through_its_own_store_is_read_again_at_once(engine: Engine, org) -> None:  # type: ignore[no-untyped-def]
    store = ClientStore(engine, recent_max_age=60)
    client, _ = store.create(
        name="Svc", org_id=org.id, auth_method="client_secret_basic", grants=["client_credentials"]
    )
    assert store.recent(client.id) == client
    store.new_secret(client.id)
    renewed = store.recent(client.id)
    assert renewed is not None and renewed.secret_hash != client.secret_hash
    store.delete(client.id)
    assert store.recent(client.id) is None


def test_an_access_token_verified_before_expires_at_its_exp_all_the_same(  # type: ignore[no-untyped-def]
    engine: Engine, org
) -> None:
    client, _ = ClientStore(engine).create(
        name="Job", org_id=org.id, auth_method="client_secret_basic", grants=["client_credentials"]
    )
    clock = MovableClock()
    keys = SigningKeys(
        engine,
        timedelta(0),
        timedelta(minutes=10),
        sealer=Sealer([new_key()]),
        max_age=SIGNING_KEYS_MAX_AGE,
        clock=clock,
    )
    keys.ensure()
    tokens = token_services(engine, keys, clock)
    issued = tokens.minter.access_token(client_id=client.id, org=org, scope=("members:read",), user_id=None)
    assert tokens.verifier.verify_access_token(issued.token).client_id == client.id  # verified, and remembered
    clock.advance(timedelta(minutes=10, seconds=1).total_seconds())
    with pytest.raises(InvalidToken, match="expired"):
        tokens.verifier.verify_access_token(issued.token)


def test_deleting_an_unknown_client_is_an_error(engine: Engine) -> None:
    with pytest.raises(UnknownRecord):
        ClientStore(engine).delete("cli_missing")


SEALER = Sealer([new_key()])  # every node of a deployment shares the keys


def keys(engine: Engine, delay: int = 120, clock: Clock = SYSTEM_CLOCK) -> SigningKeys:
    """The signing keys of one node; a ``MovableClock`` moves both their wall clock and their interval timer."""
    return SigningKeys(
        engine,
        publish_delay=timedelta(seconds=delay),
        verify_window=timedelta(hours=1),
        sealer=SEALER,
        max_age=SIGNING_KEYS_MAX_AGE,
        clock=clock,
        **({"monotonic": clock.monotonic} if isinstance(clock, MovableClock) else {}),
    )


def test_first_start_creates_one_signing_key(engine: Engine) -> None:
    store = keys(engine)
    store.ensure()
    store.ensure()
    assert [info.state(info.created_at) for info in store.list()] == ["signing"]


def test_rotated_key_is_published_before_it_signs(engine: Engine) -> None:
    store = keys(engine, delay=120)
    store.ensure()
    old_kid, _ = store.signing_key()
    new = store.rotate()
    assert store.signing_key()[0] == old_kid
    assert {k["kid"] for k in store.jwks()["keys"]} == {old_kid, new.kid}


def test_rotated_key_signs_after_the_delay_and_old_key_still_verifies(engine: Engine) -> None:
    store = keys(engine, delay=0)
    store.ensure()
    old_kid, old_key = store.signing_key()
    token = jwt.encode({"sub": "x"}, old_key, algorithm="RS256", headers={"kid": old_kid})
    new = store.rotate()
    assert store.signing_key()[0] == new.kid
    published = {k["kid"]: k for k in store.jwks()["keys"]}
    verifier = jwt.PyJWK(published[old_kid]).key
    assert jwt.decode(token, verifier, algorithms=["RS256"]) == {"sub": "x"}


def test_a_key_rotated_on_another_node_signs_here_from_its_time_though_keys_are_read_only_now_and_then(
    engine: Engine,
) -> None:
    clock = MovableClock()
    here, there = keys(engine, delay=120, clock=clock), keys(engine, delay=120, clock=clock)
    here.ensure()
    old_kid, _ = here.signing_key()  # read now: the next reads come at most every half delay
    new = there.rotate()
    assert here.signing_key()[0] == old_kid  # published, not signing yet
    clock.advance(60)  # half the delay later: the keys are read again, the new one is not due yet
    assert here.signing_key()[0] == old_kid
    clock.advance(61)
    assert here.signing_key()[0] == new.kid


def test_a_key_rotated_with_no_publish_delay_signs_on_every_node_at_once(engine: Engine) -> None:
    here, there = keys(engine, delay=0), keys(engine, delay=0)
    here.ensure()
    here.signing_key()
    new = there.rotate()
    assert here.signing_key()[0] == new.kid


def test_rotate_on_an_empty_database_signs_at_once(engine: Engine) -> None:
    store = keys(engine, delay=3600)
    info = store.rotate()
    assert store.signing_key()[0] == info.kid


def test_the_served_jwks_shows_a_rotation_here_at_once_and_one_elsewhere_at_the_next_read(engine: Engine) -> None:
    here, there = keys(engine), keys(engine)
    here.ensure()
    (current,) = here.published().keys
    mine = here.rotate()
    assert {k["kid"] for k in here.published().keys} == {current["kid"], mine.kid}
    theirs = there.rotate()
    assert theirs.kid not in {k["kid"] for k in here.published().keys}  # from memory: not read yet
    assert theirs.kid in {k["kid"] for k in here.refresh_published().keys}
    assert json.loads(here.published().body) == here.jwks()  # the bytes served are the document read


def test_jwks_holds_only_public_keys(engine: Engine) -> None:
    store = keys(engine)
    store.ensure()
    (key,) = store.jwks()["keys"]
    assert key["kty"] == "RSA" and key["alg"] == "RS256" and key["use"] == "sig"
    assert not {"d", "p", "q", "dp", "dq", "qi"} & set(key)
