"""Applications and the audit trail in the developer console (openapi/console.yaml): registering an organization's
OAuth clients within what an organization may have, the secret shown once (POST/redirect/GET), rotation with a
grace, management scopes granted by owners only, deletion; the trail of who did what, when and from where."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import OrganizationStore
from identity.accounts.users import UserStore
from identity.common.tables import clients, organizations
from service.settings import Settings
from tests.support.clocks import MovableClock
from tests.support.console_client import ConsoleBrowser
from tests.support.identity_fixtures import PASSWORD
from tests.support.passwords import FAST_HASHING

SECRET = re.compile(r'value="(cs_[A-Za-z0-9_-]+)"')


@pytest.fixture
def owner(app: Any) -> Iterator[ConsoleBrowser]:
    with ConsoleBrowser(app) as browser:
        browser.complete(browser.sign_up("olga@example.com", name="Olga Owner", organization="Olive Grove"))
        yield browser


def grove_id(engine: Engine) -> str:
    with engine.connect() as connection:
        return str(connection.scalar(sa.select(organizations.c.id).where(organizations.c.name == "Olive Grove")))


def member_console(app: Any, engine: Engine, role: str) -> ConsoleBrowser:
    UserStore(engine, hashing=FAST_HASHING).create(
        f"{role}@example.com", role.title(), PASSWORD, [(grove_id(engine), role)]
    )
    browser = ConsoleBrowser(app).__enter__()
    browser.complete(browser.sign_in(f"{role}@example.com"))
    return browser


def register(console: ConsoleBrowser, **fields: str) -> Any:
    form = {
        "csrf_token": console.csrf(),
        "name": "Recipe app",
        "auth_method": "client_secret_basic",
        "grant_authorization_code": "on",
        "grant_client_credentials": "on",
        "scope_openid": "on",
        "scope_members_read": "on",
        "redirect_uris": "https://app.example.com/callback",
        **fields,
    }
    return console.post("/console/apps", form)


def registered(console: ConsoleBrowser) -> tuple[str, str]:
    """Register an application and read its secret from the page that shows it once: (client id, secret)."""
    answer = register(console)
    assert answer.status_code == 303 and answer.headers["location"] == "/console/app-secret", answer.text
    page = console.get("/console/app-secret")
    secret = SECRET.search(page.text)
    client_id = re.search(r"<code>(cli_[0-9a-f]{16})</code>", page.text)
    assert secret and client_id, page.text
    return client_id.group(1), secret.group(1)


def token_status(app: Any, client_id: str, secret: str) -> int:
    with TestClient(app, base_url="http://127.0.0.1:8000") as http:
        answer = http.post("/oauth2/token", data={"grant_type": "client_credentials"}, auth=(client_id, secret))
    return answer.status_code


def test_an_owner_registers_an_application_and_sees_its_secret_once(owner: ConsoleBrowser, engine: Engine) -> None:
    assert "Register an application" in owner.get("/console/apps").text
    client_id, secret = registered(owner)
    again = owner.get("/console/app-secret")
    assert "no longer shown" in again.text and secret not in again.text
    with engine.connect() as connection:
        row = connection.execute(sa.select(clients).where(clients.c.id == client_id)).one()
    assert row.org_id == grove_id(engine) and not row.first_party and row.pkce_required
    assert secret not in " ".join(str(value) for value in row)  # only its hash is kept
    assert client_id in owner.get("/console/apps").text


def test_registration_refuses_what_an_organization_may_not_have(owner: ConsoleBrowser) -> None:
    public = register(owner, auth_method="none")
    assert public.status_code == 400  # MENUS_PUBLIC_CLIENTS is off on this node
    internal = register(owner, backchannel_logout_uri="https://10.1.2.3/logout")
    assert internal.status_code == 400 and "public internet" in internal.text
    metadata = register(owner, backchannel_logout_uri="https://169.254.169.254/latest")
    assert metadata.status_code == 400 and "link-local" in metadata.text
    no_redirect = register(owner, redirect_uris="")
    assert no_redirect.status_code == 400 and "redirect URI" in no_redirect.text
    management = owner.post(
        "/console/apps",
        {"csrf_token": owner.csrf(), "name": "x", "auth_method": "client_secret_basic", "manage_members": "on"},
    )
    assert management.status_code == 400  # not a field of the registration form


def test_a_rotated_secret_keeps_the_old_one_for_the_grace_and_not_after(
    owner: ConsoleBrowser, app: Any, clock: MovableClock, settings: Settings
) -> None:
    client_id, old = registered(owner)
    rotated = owner.post(f"/console/apps/{client_id}/secret", {"csrf_token": owner.csrf()})
    assert rotated.status_code == 303
    page = owner.get("/console/app-secret")
    new = SECRET.search(page.text)
    assert new and new.group(1) != old and "previous secret works until" in page.text
    assert token_status(app, client_id, old) == 200 and token_status(app, client_id, new.group(1)) == 200
    clock.advance(settings.client_secret_grace + 1)
    assert token_status(app, client_id, old) == 401 and token_status(app, client_id, new.group(1)) == 200


def test_only_an_owner_grants_management_scopes(owner: ConsoleBrowser, app: Any, engine: Engine) -> None:
    client_id, secret = registered(owner)
    admin = member_console(app, engine, "admin")
    refused = admin.post(f"/console/apps/{client_id}/management", {"csrf_token": admin.csrf(), "manage_members": "on"})
    assert refused.status_code == 403
    granted = owner.post(f"/console/apps/{client_id}/management", {"csrf_token": owner.csrf(), "manage_members": "on"})
    assert granted.status_code == 303
    with TestClient(app, base_url="http://127.0.0.1:8000") as http:
        answer = http.post(
            "/oauth2/token",
            data={"grant_type": "client_credentials", "scope": "manage:members"},
            auth=(client_id, secret),
        )
        assert answer.status_code == 200, answer.text
        members = http.get(
            "/management/v1/members", headers={"Authorization": f"Bearer {answer.json()['access_token']}"}
        )
        assert members.status_code == 200 and members.json()["total"] == 2
    admin.__exit__()


def test_members_see_the_applications_but_not_their_settings(owner: ConsoleBrowser, app: Any, engine: Engine) -> None:
    client_id, _ = registered(owner)
    member = member_console(app, engine, "member")
    listed = member.get("/console/apps")
    assert "Recipe app" in listed.text and "Register an application" not in listed.text
    assert member.get(f"/console/apps/{client_id}").status_code == 403
    assert register(member).status_code == 403
    member.__exit__()


def test_another_organizations_application_is_not_found(owner: ConsoleBrowser, app: Any, engine: Engine) -> None:
    with ConsoleBrowser(app) as other:
        other.complete(other.sign_up("pat@example.com", name="Pat", organization="Pepper Patch"))
        theirs, _ = registered(other)
    assert owner.get(f"/console/apps/{theirs}").status_code == 404
    for action in ("secret", "delete", "management"):
        assert owner.post(f"/console/apps/{theirs}/{action}", {"csrf_token": owner.csrf()}).status_code == 404, action


def test_an_application_is_changed_and_deleted_with_its_tokens(owner: ConsoleBrowser, app: Any, engine: Engine) -> None:
    client_id, secret = registered(owner)
    page = owner.get(f"/console/apps/{client_id}").text
    version = re.search(r'name="version" value="([^"]+)"', page)
    assert version
    form = {
        "csrf_token": owner.csrf(),
        "version": version.group(1).replace("&#34;", '"'),
        "name": "Recipe app 2",
        "redirect_uris": "https://app.example.com/callback https://app.example.com/other",
    }
    changed = owner.post(f"/console/apps/{client_id}", form)
    assert changed.status_code == 303, changed.text
    stale = owner.post(f"/console/apps/{client_id}", {**form, "name": "Third"})
    assert stale.status_code == 409
    with engine.connect() as connection:
        row = connection.execute(sa.select(clients).where(clients.c.id == client_id)).one()
    assert row.name == "Recipe app 2" and len(row.redirect_uris) == 2
    assert owner.post(f"/console/apps/{client_id}/delete", {"csrf_token": owner.csrf()}).status_code == 303
    assert token_status(app, client_id, secret) == 401
    assert owner.post(f"/console/apps/{client_id}/delete", {"csrf_token": "wrong"}).status_code == 403


# The audit trail


def test_the_audit_trail_says_who_did_what_when_and_from_where(owner: ConsoleBrowser, app: Any, engine: Engine) -> None:
    client_id, _ = registered(owner)
    owner.post(f"/console/apps/{client_id}/secret", {"csrf_token": owner.csrf()})
    owner.post("/console/keys", {"csrf_token": owner.csrf(), "name": "nightly"})
    owner.post("/console/invitations", {"csrf_token": owner.csrf(), "email": "tom@example.com", "role": "member"})
    page = owner.get("/console/audit")
    assert page.status_code == 200
    rows = re.findall(
        r"<tr>\s*<td><time[^>]*>[^<]*</time></td>\s*<td>([^<]+)</td>\s*<td>([^<]*)</td>\s*<td>([^<]*)</td>", page.text
    )
    kinds = [kind for kind, _, _ in rows]
    assert kinds == ["member invited", "api key created", "client secret rotated", "client created", "console sign in"]
    assert all(who == "Olga Owner" and network == "testclient" for _, who, network in rows)
    only = owner.get("/console/audit?" + urlencode({"kind": "client_created"}))
    assert only.text.count("client created") >= 1 and "member invited</td>" not in only.text
    member = member_console(app, engine, "member")
    assert member.get("/console/audit").status_code == 200  # every member sees the trail
    member.__exit__()
    assert owner.get("/console/audit?kind=nonsense").status_code == 400


def test_console_sign_ins_enter_the_trail_of_the_organization_signed_in_to(
    owner: ConsoleBrowser, engine: Engine
) -> None:
    other = OrganizationStore(engine).create("Elsewhere")
    with engine.connect() as connection:
        count = connection.scalar(
            sa.text("SELECT count(*) FROM organization_events WHERE org_id = :o"), {"o": other.id}
        )
    assert count == 0
    with engine.connect() as connection:
        kinds = (
            connection.execute(
                sa.text("SELECT kind FROM organization_events WHERE org_id = :o"), {"o": grove_id(engine)}
            )
            .scalars()
            .all()
        )
    assert kinds == ["console_sign_in"]
