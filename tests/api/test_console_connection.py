"""The console's page of the organization's identity provider connection (openapi/console.yaml ``/connection``,
identity/federation/administration.py): owners only; registering it fetches and validates the provider's
discovery; the secret is sealed at rest and never shown again; the claimed domains it covers; every change in the
organization's trail; CSRF, bounds and the provider's failures as pages."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.accounts.organizations import OrganizationStore
from identity.accounts.users import UserStore
from identity.federation.domains import DomainClaims
from identity.federation.tables import federation_connections
from identity.federation.upstream_http import Answer
from identity.organizations.tables import organization_events
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.clocks import MovableClock
from tests.support.console_client import ConsoleBrowser, form_with
from tests.support.identity_fixtures import PASSWORD
from tests.support.passwords import FAST_HASHING
from tests.support.upstream_fake import CLIENT_ID, CLIENT_SECRET, FakeUpstream

PAGE = "/console/connection"


@pytest.fixture
def upstream() -> FakeUpstream:
    return FakeUpstream()


@pytest.fixture
def app(settings: Settings, engine: Engine, catalog: Any, clock: MovableClock, upstream: FakeUpstream) -> Any:
    return make_app(settings, catalog=catalog, clock=clock, upstream=upstream)


@pytest.fixture
def owner(app: Any, engine: Engine) -> Iterator[ConsoleBrowser]:
    """Olga, who signed up in the console: the owner of Olive Grove, which claims olive.example."""
    with ConsoleBrowser(app) as browser:
        browser.complete(browser.sign_up("olga@example.com", name="Olga Owner", organization="Olive Grove"))
        DomainClaims(engine).claim(org_id(engine), "olive.example")
        DomainClaims(engine).claim(org_id(engine), "olive-staff.example")
        yield browser


def org_id(engine: Engine, name: str = "Olive Grove") -> str:
    return next(org.id for org in OrganizationStore(engine).list() if org.name == name)


def connect(browser: ConsoleBrowser, **fields: str) -> Any:
    form = {
        "csrf_token": browser.csrf(),
        "issuer": FakeUpstream().issuer,
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "scopes": "openid email profile",
        "default_role": "member",
        **fields,
    }
    return browser.post(PAGE, {name: value for name, value in form.items() if value is not None})


def sign_in_email_first(browser: ConsoleBrowser, email: str) -> Any:
    """Sign in to the console where domains are claimed: the email first (not a claimed domain), then the password."""
    _, page = browser.start()
    asked = form_with(page.text, "email")
    answer = browser.post(asked.action, {**asked.fields, "email": email})
    if answer.status_code in (302, 303):
        answer = browser.get(answer.headers["location"])
    form = form_with(answer.text, "password")
    signed_in = browser.post(form.action, {**form.fields, "email": email, "password": PASSWORD})
    return browser.follow(signed_in, "/console/callback")


def trail_kinds(engine: Engine) -> list[str]:
    with engine.connect() as connection:
        return list(connection.scalars(sa.select(organization_events.c.kind).order_by(organization_events.c.at)))


def test_an_owner_registers_the_connection_and_its_secret_is_sealed_and_never_shown(
    owner: ConsoleBrowser, engine: Engine, upstream: FakeUpstream
) -> None:
    empty = owner.get(PAGE)
    assert empty.status_code == 200 and "Connect a provider" in empty.text
    assert f"/federation/{org_id(engine)}/callback" in empty.text  # what to register at the provider
    saved = connect(owner, sso_required="on", domains="olive.example")
    assert saved.status_code == 303 and saved.headers["location"] == PAGE
    assert ("GET", f"{upstream.issuer}/.well-known/openid-configuration") in upstream.requests  # discovered now
    page = owner.get(PAGE)
    assert page.status_code == 200 and upstream.issuer in page.text and CLIENT_ID in page.text
    assert CLIENT_SECRET not in page.text
    assert f'href="http://127.0.0.1:8000/federation/{org_id(engine)}/test"' in page.text  # the "try it" sign-in
    with engine.connect() as connection:
        row = connection.execute(sa.select(federation_connections)).one()
    assert CLIENT_SECRET not in row.client_secret  # sealed at rest
    assert row.sso_required is True and row.domains == ["olive.example"]
    assert trail_kinds(engine)[-1] == "connection_created"


def test_a_change_without_a_secret_keeps_the_stored_one_and_is_in_the_trail(
    owner: ConsoleBrowser, engine: Engine
) -> None:
    connect(owner)
    version = re.search(r'name="version" value="([^"]+)"', owner.get(PAGE).text)
    assert version is not None
    read = html.unescape(version.group(1))
    changed = connect(owner, client_secret="", default_role="admin", version=read)
    assert changed.status_code == 303, changed.text
    with engine.connect() as connection:
        row = connection.execute(sa.select(federation_connections)).one()
    assert row.default_role == "admin"
    stale = connect(owner, client_secret="", version=read)  # the version read before the change
    assert stale.status_code == 409 and "changed since it was read" in stale.text
    assert trail_kinds(engine)[-2:] == ["connection_created", "connection_changed"]


def test_a_domain_the_organization_does_not_claim_is_refused(owner: ConsoleBrowser, engine: Engine) -> None:
    refused = connect(owner, domains="olive.example elsewhere.example")
    assert refused.status_code == 400 and "is not a domain the organization claims" in refused.text
    assert 'value="olive.example elsewhere.example"' in refused.text  # the values typed stay, never the secret
    assert CLIENT_SECRET not in refused.text
    assert "connection_created" not in trail_kinds(engine)


def test_an_issuer_whose_provider_cannot_be_used_is_refused_and_nothing_is_saved(
    owner: ConsoleBrowser, engine: Engine, upstream: FakeUpstream
) -> None:
    upstream.overrides[f"{upstream.issuer}/.well-known/openid-configuration"] = Answer(500, b"", "text/html")
    failed = connect(owner)
    assert failed.status_code == 400 and "The provider at this issuer cannot be used" in failed.text
    with engine.connect() as connection:
        assert connection.scalar(sa.select(sa.func.count()).select_from(federation_connections)) == 0


def test_discovery_fetches_are_bounded_per_organization_with_retry_after(
    owner: ConsoleBrowser, upstream: FakeUpstream
) -> None:
    answers = [connect(owner).status_code for _ in range(6)]
    assert answers == [303] * 5 + [429]
    assert connect(owner).headers["retry-after"] == "60"


def test_the_owner_deletes_the_connection_and_the_trail_says_so(owner: ConsoleBrowser, engine: Engine) -> None:
    connect(owner)
    deleted = owner.post(PAGE + "/delete", {"csrf_token": owner.csrf()})
    assert deleted.status_code == 303
    assert "Connect a provider" in owner.get(PAGE).text
    assert trail_kinds(engine)[-1] == "connection_deleted"
    again = owner.post(PAGE + "/delete", {"csrf_token": owner.csrf()})
    assert again.status_code == 404


@pytest.mark.parametrize("role", ["admin", "member"])
def test_only_an_owner_sees_or_changes_the_connection(
    app: Any, owner: ConsoleBrowser, engine: Engine, role: str
) -> None:
    connect(owner)
    UserStore(engine, hashing=FAST_HASHING).create(f"{role}@example.com", role, PASSWORD, [(org_id(engine), role)])
    with ConsoleBrowser(app) as other:
        other.complete(sign_in_email_first(other, f"{role}@example.com"))
        assert "Sign-in connection" not in other.get("/console/").text
        assert other.get(PAGE).status_code == 403
        assert connect(other, client_secret="stolen").status_code == 403
        assert other.post(PAGE + "/delete", {"csrf_token": other.csrf()}).status_code == 403
    assert trail_kinds(engine).count("connection_created") == 1
    assert "connection_deleted" not in trail_kinds(engine)


def test_another_organizations_connection_is_never_reached(app: Any, owner: ConsoleBrowser, engine: Engine) -> None:
    """The page is the visitor's own organization's: an owner of another sees theirs (none), not Olive Grove's."""
    connect(owner)
    with ConsoleBrowser(app) as stranger:
        stranger.complete(stranger.sign_up("sam@example.com", name="Sam", organization="Sam's Diner"))
        page = stranger.get(PAGE)
        assert page.status_code == 200 and "Connect a provider" in page.text and CLIENT_ID not in page.text
        assert stranger.post(PAGE + "/delete", {"csrf_token": stranger.csrf()}).status_code == 404
    assert "connection_deleted" not in trail_kinds(engine)


def test_every_form_needs_the_sessions_csrf_token(owner: ConsoleBrowser, engine: Engine) -> None:
    assert connect(owner, csrf_token="forged").status_code == 403
    assert owner.post(PAGE + "/delete", {"csrf_token": "forged"}).status_code == 403
    assert trail_kinds(engine).count("connection_created") == 0


@pytest.mark.parametrize(
    "field, value",
    [
        ("issuer", "x" * 1001),
        ("client_id", "x" * 256),
        ("client_secret", "x" * 1025),
        ("domains", "d" * 1001),
        ("issuer", "https://id.corp.example/\u00e9"),  # printable ASCII only
    ],
)
def test_each_field_is_bounded(owner: ConsoleBrowser, field: str, value: str) -> None:
    assert connect(owner, **{field: value}).status_code == 400


def test_the_largest_form_fits_the_consoles_form_limit(owner: ConsoleBrowser) -> None:
    """Every field at its bound, each character one that percent-encoding triples: refused for its values (here its
    version, which names no connection: 409), never for its size (413), so a form the contract allows always reaches
    its rules."""
    widest = '"'
    answer = connect(
        owner,
        version=widest * 64,
        issuer=widest * 1000,
        client_id=widest * 255,
        client_secret=widest * 1024,
        scopes=widest * 1000,
        domains=widest * 1000,
    )
    assert answer.status_code == 409, answer.text
