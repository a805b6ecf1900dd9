"""Public clients' registration and web origins, without the app: what is stored, what an update changes, and how
often the registered origins are read."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine

from identity.accounts.organizations import Organization
from identity.clients.metadata import check_web_origin
from identity.clients.registry import ClientStore
from identity.clients.web_origins import WebOrigins
from identity.common.errors import InvalidInput, OriginNotAllowed, UnknownRecord
from identity.common.issuer import Issuer


def test_a_public_client_has_no_secret_requires_pkce_and_keeps_its_origins(engine: Engine, org: Organization) -> None:
    client, secret = ClientStore(engine).create(
        name="SPA", org_id=org.id, auth_method="none", redirect_uris=["https://spa.example/cb"],
        web_origins=["https://spa.example", "https://spa.example:443", "http://127.0.0.1:5173"],
    )  # fmt: skip
    assert secret is None and client.secret_hash is None and client.public and client.pkce_required
    assert client.web_origins == ("https://spa.example", "http://127.0.0.1:5173")  # RFC 6454 §6.2: no default port
    assert ClientStore(engine).get(client.id) == client
    assert client.as_dict()["token_endpoint_auth_method"] == "none"
    assert client.as_dict()["web_origins"] == ["https://spa.example", "http://127.0.0.1:5173"]
    with pytest.raises(UnknownRecord):
        ClientStore(engine).new_secret(client.id)  # a public client never gets a secret


@pytest.mark.parametrize(
    "origin", ["https://a.example", "https://a.example:8443", "http://[::1]:3000", "http://localhost"]
)
def test_web_origins_are_scheme_host_and_port(origin: str) -> None:
    assert check_web_origin(origin) == origin


def test_update_changes_origins_and_redirect_uris_under_the_same_id(engine: Engine, org: Organization) -> None:
    store = ClientStore(engine)
    client, _ = store.create(name="SPA", org_id=org.id, auth_method="none", redirect_uris=["https://spa.example/cb"])
    updated = store.update(
        client.id, redirect_uris=["https://spa.example/callback"], web_origins=["https://spa.example"]
    )
    assert updated.id == client.id and store.get(client.id) == updated
    assert updated.redirect_uris == ("https://spa.example/callback",) and updated.web_origins == (
        "https://spa.example",
    )
    assert (
        store.update(client.id, post_logout_redirect_uris=["https://spa.example/"]).web_origins == updated.web_origins
    )
    with pytest.raises(InvalidInput, match="needs at least one redirect URI"):
        store.update(client.id, redirect_uris=[])
    with pytest.raises(UnknownRecord):
        store.update("cli_missing", web_origins=[])


def test_update_refuses_web_origins_for_a_confidential_client(engine: Engine, org: Organization) -> None:
    store = ClientStore(engine)
    client, secret = store.create(
        name="Web", org_id=org.id, auth_method="client_secret_basic", redirect_uris=["https://w.example/cb"]
    )
    with pytest.raises(InvalidInput, match="only for public clients"):
        store.update(client.id, web_origins=["https://w.example"])
    assert secret is not None and store.get(client.id) == client  # nothing half-written


def test_registered_origins_are_read_again_only_after_their_max_age(engine: Engine, org: Organization) -> None:
    store = ClientStore(engine)
    now = [0.0]
    origins = WebOrigins(Issuer("https://id.example"), store, enabled=True, max_age=5, monotonic=lambda: now[0])
    client, _ = store.create(name="SPA", org_id=org.id, auth_method="none", redirect_uris=["https://s.example/cb"])
    assert not origins.registered("https://s.example")
    store.update(client.id, web_origins=["https://s.example"])
    now[0] = 4.9
    assert not origins.registered("https://s.example")  # still the answer read at 0
    now[0] = 5.0
    assert origins.registered("https://s.example")


def test_a_page_is_refused_unless_its_origin_is_the_issuers_or_registered(engine: Engine, org: Organization) -> None:
    store = ClientStore(engine)
    spa, _ = store.create(
        name="SPA", org_id=org.id, auth_method="none", redirect_uris=["https://s.example/cb"],
        web_origins=["https://s.example"],
    )  # fmt: skip
    on = WebOrigins(Issuer("https://id.example/tenant"), store, enabled=True, max_age=5)
    for origin in (None, "https://id.example", "https://s.example"):
        on.check(spa, origin)
    with pytest.raises(OriginNotAllowed):
        on.check(spa, "https://other.example")
    with pytest.raises(OriginNotAllowed):
        on.check_own(spa, "https://s.example")  # introspection: the issuer's own pages only
    off = WebOrigins(Issuer("https://id.example"), store, enabled=False, max_age=5)
    with pytest.raises(OriginNotAllowed):
        off.check(spa, "https://s.example")
    assert not off.registered("https://s.example")
