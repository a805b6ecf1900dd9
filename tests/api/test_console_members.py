"""Members and invitations in the developer console (openapi/console.yaml, identity/organizations/): inviting by
mail with a single-use link kept only as its hash, joining through it (signed in, or signing up into the
organization), roles and the last owner, removing a member (their tokens for the organization end at once), leaving,
sending again and revoking, the bounds, and the forms' CSRF, roles and other organizations' records."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import OrganizationStore
from identity.accounts.users import UserStore
from identity.common.tables import mail_outbox, memberships, organizations, users
from identity.organizations.tables import invitations
from service.settings import Settings
from tests.support import token_flows as flows
from tests.support.apps import make_app
from tests.support.clocks import MovableClock
from tests.support.console_client import ConsoleBrowser, form_with
from tests.support.identity_fixtures import PASSWORD
from tests.support.mailbox import mails
from tests.support.passwords import FAST_HASHING

MEMBERS = "/console/members"


@pytest.fixture
def owner(app: Any) -> Iterator[ConsoleBrowser]:
    """Olga, who signed up in the console: the owner of Olive Grove."""
    with ConsoleBrowser(app) as browser:
        browser.complete(browser.sign_up("olga@example.com", name="Olga Owner", organization="Olive Grove"))
        yield browser


@pytest.fixture
def teammate(app: Any) -> Iterator[ConsoleBrowser]:
    with ConsoleBrowser(app) as browser:
        yield browser


@pytest.fixture
def elsewhere(engine: Engine) -> str:
    """Una and Vic, who have accounts: each owns Elsewhere, another organization. Its id."""
    org = OrganizationStore(engine).create("Elsewhere")
    accounts = UserStore(engine, hashing=FAST_HASHING)
    for email, name in (("una@example.com", "Una"), ("vic@example.com", "Vic")):
        accounts.create(email, name, PASSWORD, [(org.id, "owner")])
    return org.id


@pytest.fixture
def una_invited(owner: ConsoleBrowser, engine: Engine, settings: Settings, elsewhere: str) -> str:
    """Olga invited Una (who has an account elsewhere) as a member: the token of the mailed link."""
    invite(owner, "una@example.com")
    return mailed_token(engine, settings, "una@example.com")


def org_id(engine: Engine, name: str = "Olive Grove") -> str:
    with engine.connect() as connection:
        return str(connection.scalar(sa.select(organizations.c.id).where(organizations.c.name == name)))


def user_id(engine: Engine, email: str) -> str:
    with engine.connect() as connection:
        return str(connection.scalar(sa.select(users.c.id).where(users.c.email == email)))


def invite(console: ConsoleBrowser, email: str, role: str = "member") -> Any:
    return console.post("/console/invitations", {"csrf_token": console.csrf(), "email": email, "role": role})


def mailed_token(engine: Engine, settings: Settings, email: str) -> str:
    """The token of the last invitation mailed to ``email``, from the mail itself."""
    link = [m for m in mails(engine, settings, "invitation") if m.recipient == email][-1].params["link"]
    assert urlsplit(link).path == "/console/invitation", link
    return parse_qs(urlsplit(link).query)["token"][0]


def join_by_signing_up(browser: ConsoleBrowser, token: str, email: str, name: str = "Tom Teammate") -> Any:
    """Follow "Create an account" from an invitation's page, sign up on the provider's page: the console's answer
    to the callback."""
    started = browser.get("/console/sign-in?" + urlencode({"prompt": "create", "invitation": token}))
    assert started.status_code == 303
    page = browser.get(browser.get(started.headers["location"]).headers["location"])
    assert page.status_code == 200 and 'name="organization"' not in page.text, page.text
    form = form_with(page.text, "password")
    answer = browser.post(form.action, {**form.fields, "name": name, "email": email, "password": PASSWORD})
    callback = browser.follow(answer, "/console/callback")
    return browser.get(callback.headers["location"])


def csrf(console: ConsoleBrowser) -> str:
    return console.csrf()


def version_of(page: str, user: str) -> str:
    match = re.search(rf'action="/console/members/{user}/role"[^§]*?name="version" value="([^"]+)"', page)
    assert match, page
    return match.group(1).replace("&#34;", '"')


# Inviting and joining


def test_an_invitation_is_mailed_with_a_single_use_link_whose_token_is_kept_only_as_a_hash(
    owner: ConsoleBrowser, engine: Engine, settings: Settings
) -> None:
    answer = invite(owner, "tom@example.com")
    assert answer.status_code == 303 and answer.headers["location"] == MEMBERS
    token = mailed_token(engine, settings, "tom@example.com")
    with engine.connect() as connection:
        row = connection.execute(sa.select(invitations)).one()
        stored = " ".join(str(value) for value in row)
        outbox = " ".join(str(value) for value in connection.execute(sa.select(mail_outbox.c.params)).scalars())
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in stored and token not in outbox  # the mail's values are sealed at rest
    assert (row.expires_at - row.created_at).days == 7
    page = owner.get(MEMBERS)
    assert "Pending invitations" in page.text and "tom@example.com" in page.text


def test_someone_new_signs_up_through_the_link_into_the_organization_and_no_new_one_is_made(
    owner: ConsoleBrowser, teammate: ConsoleBrowser, engine: Engine, settings: Settings
) -> None:
    invite(owner, "tom@example.com", "admin")
    token = mailed_token(engine, settings, "tom@example.com")
    welcome = teammate.get("/console/invitation?" + urlencode({"token": token}))
    assert welcome.status_code == 200 and "Olive Grove" in welcome.text and "Create an account" in welcome.text
    with engine.connect() as connection:
        before = connection.scalar(sa.select(sa.func.count()).select_from(organizations))
    landed = join_by_signing_up(teammate, token, "tom@example.com")
    assert landed.status_code == 303 and landed.headers["location"] == "/console/"
    home = teammate.get("/console/")
    assert "<strong>Olive Grove</strong> (admin)" in home.text
    with engine.connect() as connection:
        assert connection.scalar(sa.select(sa.func.count()).select_from(organizations)) == before
        verified = connection.scalar(sa.select(users.c.email_verified).where(users.c.email == "tom@example.com"))
    assert verified  # the link was mailed to this address: it is the person's
    spent = teammate.get("/console/invitation?" + urlencode({"token": token}))
    assert spent.status_code == 404 and "already used" in spent.text


def test_someone_with_an_account_accepts_signed_in_and_the_console_switches_to_the_organization(
    teammate: ConsoleBrowser, una_invited: str
) -> None:
    token = una_invited
    teammate.complete(teammate.sign_in("una@example.com"))
    page = teammate.get("/console/invitation?" + urlencode({"token": token}))
    assert "Accept and join Olive Grove" in page.text
    accepted = teammate.post("/console/invitation", {"csrf_token": teammate.csrf(), "token": token})
    assert accepted.status_code == 303 and accepted.headers["location"] == MEMBERS
    assert "<strong>Olive Grove</strong> (member)" in teammate.get(MEMBERS).text
    again = teammate.post("/console/invitation", {"csrf_token": teammate.csrf(), "token": token})
    assert again.status_code == 404  # single-use


def test_a_different_signed_in_user_is_asked_which_account_should_join(
    owner: ConsoleBrowser, teammate: ConsoleBrowser, engine: Engine, settings: Settings, elsewhere: str
) -> None:
    invite(owner, "tom@example.com")
    token = mailed_token(engine, settings, "tom@example.com")
    teammate.complete(teammate.sign_in("vic@example.com"))
    page = teammate.get("/console/invitation?" + urlencode({"token": token}))
    assert "Which account should join Olive Grove?" in page.text
    assert "Join as vic@example.com" in page.text
    assert f"sign-in?prompt=login&amp;invitation={token}" in page.text  # or sign in as another account


def test_the_invitation_link_carries_the_sign_in_back_to_its_page(teammate: ConsoleBrowser, una_invited: str) -> None:
    token = una_invited
    started = teammate.get("/console/sign-in?" + urlencode({"invitation": token}))
    page = teammate.get(teammate.get(started.headers["location"]).headers["location"])
    form = form_with(page.text, "password")
    answer = teammate.post(form.action, {**form.fields, "email": "una@example.com", "password": PASSWORD})
    callback = teammate.follow(answer, "/console/callback")
    back = teammate.get(callback.headers["location"])
    assert back.headers["location"] == "/console/invitation?" + urlencode({"token": token})


# Members and roles


def test_the_members_page_lists_role_joined_last_sign_in_and_verification(owner: ConsoleBrowser) -> None:
    page = owner.get(MEMBERS)
    assert page.status_code == 200
    row = re.search(r"<tr>\s*<td>Olga Owner \(you\).*?</tr>", page.text, re.S)
    assert row is not None, page.text
    assert "owner" in row.group(0) and "not verified" in row.group(0) and "UTC" in row.group(0)


def test_roles_change_within_the_rules_and_the_last_owner_stays(
    owner: ConsoleBrowser, teammate: ConsoleBrowser, engine: Engine, settings: Settings
) -> None:
    invite(owner, "tom@example.com")
    join_by_signing_up(teammate, mailed_token(engine, settings, "tom@example.com"), "tom@example.com")
    tom, olga = user_id(engine, "tom@example.com"), user_id(engine, "olga@example.com")
    page = owner.get(MEMBERS).text
    made = owner.post(
        f"/console/members/{tom}/role", {"csrf_token": csrf(owner), "role": "admin", "version": version_of(page, tom)}
    )
    assert made.status_code == 303
    stale = owner.post(
        f"/console/members/{tom}/role", {"csrf_token": csrf(owner), "role": "member", "version": version_of(page, tom)}
    )
    assert stale.status_code == 409 and "changed since it was read" in stale.text
    # Tom, now an admin, may not make himself (or anyone) an owner, nor touch the owner
    tom_page = teammate.get(MEMBERS).text
    raise_self = teammate.post(
        f"/console/members/{tom}/role", {"csrf_token": csrf(teammate), "role": "owner", "version": "x"}
    )
    assert raise_self.status_code in (403, 409)
    with engine.connect() as connection:
        version = connection.scalar(sa.select(memberships.c.version).where(memberships.c.user_id == tom))
    assert version == 1
    assert f"/console/members/{olga}/remove" not in tom_page
    # the last owner cannot demote herself
    olga_page = owner.get(MEMBERS).text
    assert f'action="/console/members/{olga}/role"' not in olga_page  # no choice is offered
    demote = owner.post(
        f"/console/members/{olga}/role",
        {"csrf_token": csrf(owner), "role": "admin", "version": '"any"'},
    )
    assert demote.status_code == 409


def test_nobody_raises_their_own_role(
    owner: ConsoleBrowser, teammate: ConsoleBrowser, engine: Engine, settings: Settings
) -> None:
    invite(owner, "tom@example.com", "admin")
    join_by_signing_up(teammate, mailed_token(engine, settings, "tom@example.com"), "tom@example.com")
    tom = user_id(engine, "tom@example.com")
    with engine.connect() as connection:
        version = connection.scalar(sa.select(memberships.c.version).where(memberships.c.user_id == tom))
    from identity.organizations.rules import version_tag

    answer = teammate.post(
        f"/console/members/{tom}/role",
        {"csrf_token": csrf(teammate), "role": "owner", "version": version_tag("member", tom, int(version))},
    )
    assert answer.status_code == 403 and "raise their own role" in answer.text


# Removing and leaving


def test_removing_a_member_ends_their_tokens_and_sessions_for_the_organization_at_once(
    owner: ConsoleBrowser, app: Any, engine: Engine, settings: Settings
) -> None:
    grove = OrganizationStore(engine).get(org_id(engine))
    assert grove is not None
    planner = flows.sign_in_client(engine, grove, "Grove Planner", backchannel_logout_uri="http://127.0.0.1:9/bc")
    reporter = flows.register(engine, grove, "Grove Report", grants=["client_credentials"], scopes=["members:read"])
    invite(owner, "tom@example.com")
    with ConsoleBrowser(app) as tom_console:
        join_by_signing_up(tom_console, mailed_token(engine, settings, "tom@example.com"), "tom@example.com")
    tom = user_id(engine, "tom@example.com")
    with TestClient(app, base_url="http://127.0.0.1:8000", follow_redirects=False) as http:
        tokens = flows.user_tokens(http, planner, email="tom@example.com")
        assert flows.introspect(http, planner, tokens["access_token"])["active"]
        app_token = flows.application_token(http, reporter, scope="members:read").json()["access_token"]
        listed = http.get("/directory/members", headers={"Authorization": f"Bearer {app_token}"}).json()
        assert any(member["id"] == tom for member in listed["data"])

        confirm = owner.get(f"/console/members/{tom}/remove")
        assert confirm.status_code == 200 and "Remove member" in confirm.text
        removed = owner.post(f"/console/members/{tom}/remove", {"csrf_token": csrf(owner)})
        assert removed.status_code == 303

        assert not flows.introspect(http, planner, tokens["access_token"])["active"]
        assert flows.userinfo_status(http, tokens["access_token"]) == 401
        assert flows.refresh(http, planner, tokens["refresh_token"]).status_code == 400
        listed = http.get("/directory/members", headers={"Authorization": f"Bearer {app_token}"}).json()
        assert all(member["id"] != tom for member in listed["data"])
    with engine.connect() as connection:
        logout = connection.execute(sa.select(mail_outbox).where(mail_outbox.c.channel == "backchannel_logout")).all()
    assert [(row.recipient, row.params["sub"]) for row in logout] == [(planner.id, tom)]


def test_a_member_leaves_but_the_last_owner_and_a_member_of_one_organization_cannot(
    owner: ConsoleBrowser, teammate: ConsoleBrowser, engine: Engine, elsewhere: str, una_invited: str
) -> None:
    refused = owner.post("/console/leave", {"csrf_token": csrf(owner)})
    assert refused.status_code == 409 and "last owner" in refused.text
    token = una_invited
    teammate.complete(teammate.sign_in("una@example.com"))
    teammate.post("/console/invitation", {"csrf_token": teammate.csrf(), "token": token})
    assert teammate.get("/console/leave").status_code == 200
    left = teammate.post("/console/leave", {"csrf_token": csrf(teammate)})
    assert left.status_code == 200 and "You left Olive Grove" in left.text
    with engine.connect() as connection:
        orgs = (
            connection.execute(
                sa.select(memberships.c.org_id).where(memberships.c.user_id == user_id(engine, "una@example.com"))
            )
            .scalars()
            .all()
        )
    assert orgs == [elsewhere]


# Invitations


def test_an_invitation_sent_again_has_a_new_link_and_a_revoked_one_opens_nothing(
    owner: ConsoleBrowser, teammate: ConsoleBrowser, engine: Engine, settings: Settings
) -> None:
    invite(owner, "tom@example.com")
    first = mailed_token(engine, settings, "tom@example.com")
    with engine.connect() as connection:
        invitation_id = connection.scalar(sa.select(invitations.c.id))
    resent = owner.post(f"/console/invitations/{invitation_id}/resend", {"csrf_token": csrf(owner)})
    assert resent.status_code == 303
    second = mailed_token(engine, settings, "tom@example.com")
    assert second != first
    assert teammate.get("/console/invitation?" + urlencode({"token": first})).status_code == 404
    assert teammate.get("/console/invitation?" + urlencode({"token": second})).status_code == 200
    assert "(2 times)" in owner.get(MEMBERS).text
    revoked = owner.post(f"/console/invitations/{invitation_id}/revoke", {"csrf_token": csrf(owner)})
    assert revoked.status_code == 303
    assert teammate.get("/console/invitation?" + urlencode({"token": second})).status_code == 404
    assert "No invitation is pending" in owner.get(MEMBERS).text


def test_an_address_already_a_member_or_already_invited_is_refused(owner: ConsoleBrowser) -> None:
    assert invite(owner, "tom@example.com").status_code == 303
    again = invite(owner, "TOM@example.com")
    assert again.status_code == 409 and "pending invitation" in again.text
    member = invite(owner, "olga@example.com")
    assert member.status_code == 409 and "already a member" in member.text
    bad = invite(owner, "not an address")
    assert bad.status_code == 400


def test_invitations_are_bounded_per_hour_and_pending(
    settings: Settings, engine: Engine, catalog: Any, clock: MovableClock
) -> None:
    bounded = dataclasses.replace(settings, invitations_per_hour=2, max_pending_invitations=3)
    app = make_app(bounded, catalog=catalog, clock=clock)
    with ConsoleBrowser(app) as console:
        console.complete(console.sign_up("olga@example.com", name="Olga Owner", organization="Olive Grove"))
        assert invite(console, "a@example.com").status_code == 303
        assert invite(console, "b@example.com").status_code == 303
        third = invite(console, "c@example.com")
        assert third.status_code == 429 and int(third.headers["retry-after"]) > 3000
        assert "2 invitations an hour" in third.text
        clock.advance(3601)
        assert invite(console, "c@example.com").status_code == 303
        clock.advance(3601)
        fourth = invite(console, "d@example.com")
        assert fourth.status_code == 409 and "3 pending invitations" in fourth.text


# The forms' rules


def test_a_member_may_not_invite_and_forms_need_the_sessions_csrf_token(
    owner: ConsoleBrowser, teammate: ConsoleBrowser, engine: Engine, settings: Settings
) -> None:
    invite(owner, "tom@example.com")
    join_by_signing_up(teammate, mailed_token(engine, settings, "tom@example.com"), "tom@example.com")
    page = teammate.get(MEMBERS)
    assert 'action="/console/invitations"' not in page.text
    refused = invite(teammate, "zed@example.com")
    assert refused.status_code == 403 and "Only an owner or an admin" in refused.text
    missing = owner.post("/console/invitations", {"email": "zed@example.com", "role": "member"})
    assert missing.status_code == 400
    wrong = owner.post("/console/invitations", {"csrf_token": "forged", "email": "zed@example.com", "role": "member"})
    assert wrong.status_code == 403
    tom = user_id(engine, "tom@example.com")
    assert teammate.get(f"/console/members/{tom}/remove").status_code == 403


def test_another_organizations_records_are_not_found(
    owner: ConsoleBrowser, app: Any, engine: Engine, settings: Settings
) -> None:
    with ConsoleBrowser(app) as other:
        other.complete(other.sign_up("pat@example.com", name="Pat", organization="Pepper Patch"))
        invite(other, "x@example.com")
        pat = user_id(engine, "pat@example.com")
        with engine.connect() as connection:
            theirs = connection.scalar(sa.select(invitations.c.id))
    assert owner.get(f"/console/members/{pat}/remove").status_code == 404
    removed = owner.post(f"/console/members/{pat}/remove", {"csrf_token": csrf(owner)})
    assert removed.status_code == 404
    for action in ("resend", "revoke"):
        answer = owner.post(f"/console/invitations/{theirs}/{action}", {"csrf_token": csrf(owner)})
        assert answer.status_code == 404, action
    assert owner.post("/console/members/usr_0000000000000000/remove", {"csrf_token": csrf(owner)}).status_code == 404
