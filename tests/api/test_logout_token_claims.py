"""The logout token a relying party receives, checked as OpenID Connect Back-Channel Logout 1.0 §2.6 tells it to:
after a real sign-out through the end-session endpoint, the token the service's signing keys make for the queued
message verifies against the JWKS the service publishes, and carries exactly the claims §2.4 lists, with the
``sid`` and ``sub`` of the ID token the client got. (tests/api/test_backchannel_logout.py checks the minter on
its own keys; this is the second, independent guard of the same rule.)"""

from __future__ import annotations

import dataclasses
from typing import Any

import jwt
import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog
from identity.clients.registry import ClientStore
from identity.mail.outbox import Outbox, Undeliverable
from identity.provider import signing_keys_of
from identity.sessions.backchannel_logout import CHANNEL
from identity.tokens.logout_tokens import LogoutTokens
from service.database.sealing_keys import load_sealer
from service.ops.periodic import BackgroundJobs
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.clocks import MovableClock
from tests.support.defaults import DELIVERY, LIFETIMES, TUNING
from tests.support.token_flows import ISSUER, World, end_session, user_tokens
from tests.support.token_services import token_services

RP_URI = "https://rp.example.com/backchannel-logout"
EVENT = "http://schemas.openid.net/event/backchannel-logout"
CLAIMS = {"iss", "aud", "iat", "exp", "jti", "events", "sub", "sid"}  # §2.4, and no other


@pytest.fixture
def app(settings: Settings, engine: Engine, catalog: Catalog, clock: MovableClock) -> Any:
    """The app without its logout worker (which would post at once after the sign-out commits): the test reads the
    outbox as that worker would."""
    built = make_app(settings, catalog=catalog, clock=clock)
    jobs = [job for job in built.background.jobs if job.name != "posting logout tokens"]
    return dataclasses.replace(built, background=BackgroundJobs(jobs))


def as_a_relying_party(http: TestClient, token: str, client_id: str) -> dict[str, Any]:
    """§2.6: the signature by a key the issuer publishes, iss, aud, iat, exp required, typ logout+jwt."""
    header = jwt.get_unverified_header(token)
    assert header["typ"] == "logout+jwt" and header["alg"] == "RS256"
    published = jwt.PyJWKSet.from_dict(http.get("/jwks").json())
    key = next(k for k in published.keys if k.key_id == header["kid"])
    return jwt.decode(
        token, key=key, algorithms=["RS256"], audience=client_id, issuer=ISSUER,
        options={"require": ["iss", "aud", "iat", "exp", "jti"]},
    )  # fmt: skip


def test_a_sign_out_gives_the_client_a_logout_token_it_can_verify_with_its_sessions_sid_and_sub(
    http: TestClient, world: World, engine: Engine, settings: Settings
) -> None:
    ClientStore(engine).update(world.planner.id, backchannel_logout_uri=RP_URI)
    tokens = user_tokens(http, world.planner)
    id_token = jwt.decode(tokens["id_token"], options={"verify_signature": False})
    assert end_session(http, "GET", id_token_hint=tokens["id_token"]).status_code == 200
    claimed = Outbox(engine, DELIVERY, channel=CHANNEL, one_destination=False).claim()
    assert claimed is not None and claimed.mail.recipient == world.planner.id
    keys = signing_keys_of(engine, LIFETIMES, TUNING, load_sealer(settings.secret_keys, settings.database_url))
    post = LogoutTokens(ClientStore(engine), token_services(engine, keys).minter).prepare(claimed)
    assert post.uri == RP_URI and not post.internal
    token = post.token
    claims = as_a_relying_party(http, token, world.planner.id)
    assert set(claims) == CLAIMS  # no nonce (§2.4: it MUST NOT), nothing else
    assert claims["events"] == {EVENT: {}}
    assert (claims["sid"], claims["sub"]) == (id_token["sid"], id_token["sub"])
    assert claims["jti"] == claimed.id and 0 < claims["exp"] - claims["iat"] <= 120


def test_a_client_that_lost_its_uri_gets_no_token_and_the_outbox_is_told_why(
    http: TestClient, world: World, engine: Engine, settings: Settings
) -> None:
    ClientStore(engine).update(world.planner.id, backchannel_logout_uri=RP_URI)
    tokens = user_tokens(http, world.planner)
    assert end_session(http, "GET", id_token_hint=tokens["id_token"]).status_code == 200
    ClientStore(engine).update(world.planner.id, backchannel_logout_uri="")  # removed before delivery
    claimed = Outbox(engine, DELIVERY, channel=CHANNEL, one_destination=False).claim()
    assert claimed is not None
    keys = signing_keys_of(engine, LIFETIMES, TUNING, load_sealer(settings.secret_keys, settings.database_url))
    with pytest.raises(Undeliverable) as refused:
        LogoutTokens(ClientStore(engine), token_services(engine, keys).minter).prepare(claimed)
    assert str(refused.value) == "the client was deleted or no longer has a back-channel logout URI"


def test_a_client_the_operator_let_reach_internal_addresses_has_its_logout_posted_there_and_no_other(
    http: TestClient, world: World, engine: Engine, settings: Settings
) -> None:
    """``--allow-internal`` (identity/common/outbound_uris.py) is the client's own: its logout posts carry it to the
    poster, and a client registered without it is posted to public addresses only (the test above)."""
    internal_uri = "https://rp.internal/backchannel-logout"
    ClientStore(engine).update(world.planner.id, backchannel_logout_uri=internal_uri, allow_internal=True)
    tokens = user_tokens(http, world.planner)
    assert end_session(http, "GET", id_token_hint=tokens["id_token"]).status_code == 200
    claimed = Outbox(engine, DELIVERY, channel=CHANNEL, one_destination=False).claim()
    assert claimed is not None
    keys = signing_keys_of(engine, LIFETIMES, TUNING, load_sealer(settings.secret_keys, settings.database_url))
    post = LogoutTokens(ClientStore(engine), token_services(engine, keys).minter).prepare(claimed)
    assert post.uri == internal_uri and post.internal is True
