"""Invitations' rules on the state database, without the web layer (identity/organizations/invitations.py): a link
opens for its lifetime and once, sending again replaces it, and the bounds per hour and of pending invitations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy.engine import Engine

from identity.accounts.organizations import OrganizationStore
from identity.accounts.users import UserStore
from identity.api_keys.console_rules import NotAllowed
from identity.mail.outbox import DeliveryPolicy, Outbox
from identity.organizations import rules
from identity.organizations.actors import Actor
from identity.organizations.invitations import ACCEPTED, EXPIRED, PENDING, REVOKED, Bounds, Invitation, Invitations
from identity.organizations.trail import Trail
from tests.support.clocks import MovableClock
from tests.support.passwords import FAST_HASHING

LINK = "https://console.menus.example/invitation"
POLICY = DeliveryPolicy(timedelta(days=30), 3, timedelta(seconds=10), timedelta(minutes=5), 10)
AT = datetime(2026, 11, 27, 12, tzinfo=UTC)


class Organization:
    """An organization with an owner, its invitations (bounds: 3 mails an hour, 2 pending) and its outbox (whose
    lease outlasts the tests' moves of the clock: a mail claimed once is not claimed again)."""

    def __init__(self, engine: Engine) -> None:
        self.clock = MovableClock()
        self.clock.hold()
        self.users = UserStore(engine, self.clock, hashing=FAST_HASHING)
        org = OrganizationStore(engine).create("Olive Grove")
        owner = self.users.create("olive@grove.example", "Olive", "a long passphrase", [(org.id, "owner")])
        self.owner = Actor.member(owner.id, org.id, "owner", None, org.name)
        self.admin = Actor.member("usr_admin", org.id, "admin", None, org.name)
        self.outbox = Outbox(engine, POLICY, self.clock)
        self.invitations = Invitations(
            engine, self.users, self.outbox, Trail(engine, b"k" * 32, self.clock), Bounds(per_hour=3, pending=2),
            LINK, b"c" * 32, lifetime=timedelta(days=7), clock=self.clock,
        )  # fmt: skip

    def token_mailed(self) -> str:
        claimed = self.outbox.claim()
        assert claimed is not None and claimed.mail.params["link"].startswith(f"{LINK}?token=")
        return parse_qs(urlsplit(claimed.mail.params["link"]).query)["token"][0]

    def member(self, email: str) -> str:
        return self.users.sign_up(email, "Someone", "a long passphrase", "Their own").id


@pytest.fixture
def org(engine: Engine) -> Organization:
    return Organization(engine)


def test_an_invitation_is_pending_until_it_expires_unless_accepted_or_revoked_first() -> None:
    sent = Invitation("inv_1", "org_1", "a@b.example", "member", AT, AT + timedelta(days=7), AT, 1)
    assert sent.state(AT + timedelta(days=7) - timedelta(microseconds=1)) == PENDING
    assert sent.state(AT + timedelta(days=7)) == EXPIRED
    accepted = Invitation("inv_1", "org_1", "a@b.example", "member", AT, AT, AT, 1, accepted_at=AT, revoked_at=AT)
    assert accepted.state(AT + timedelta(days=30)) == ACCEPTED
    revoked = Invitation("inv_1", "org_1", "a@b.example", "member", AT, AT, AT, 1, revoked_at=AT)
    assert revoked.state(AT - timedelta(days=1)) == REVOKED
    assert sent.as_dict(AT)["expires_at"] == "2026-12-04T12:00:00Z" and sent.as_dict(AT)["state"] == PENDING


def test_the_link_opens_for_its_lifetime_and_joins_once(org: Organization) -> None:
    invitation = org.invitations.invite(org.owner, "ana@corp.example", "admin")
    token = org.token_mailed()
    org.clock.advance(timedelta(days=7).total_seconds() - 1)
    preview = org.invitations.preview(token)
    assert preview is not None and preview.org_name == "Olive Grove" and preview.invitation.id == invitation.id
    ana = org.member("ana@corp.example")
    assert org.invitations.accept(token, ana).role == "admin"
    assert org.users.get(ana).email_verified  # the invited address has just shown it reads that mailbox
    assert org.invitations.preview(token) is None
    with pytest.raises(rules.Unknown, match="already used"):
        org.invitations.accept(token, org.member("bea@corp.example"))


def test_a_link_past_its_lifetime_no_longer_opens_nor_joins(org: Organization) -> None:
    org.invitations.invite(org.owner, "ana@corp.example")
    token = org.token_mailed()
    org.clock.advance(timedelta(days=7).total_seconds())
    assert org.invitations.preview(token) is None
    with pytest.raises(rules.Unknown, match="expired"):
        org.invitations.accept(token, org.member("ana@corp.example"))


def test_a_token_that_is_empty_or_over_its_bound_opens_nothing(org: Organization) -> None:
    assert org.invitations.preview("") is None
    assert org.invitations.preview("A" * 101) is None
    with pytest.raises(rules.Unknown):
        org.invitations.accept("A" * 101, org.member("ana@corp.example"))


def test_sending_again_replaces_the_link_and_restarts_its_lifetime(org: Organization) -> None:
    invitation = org.invitations.invite(org.owner, "ana@corp.example")
    first = org.token_mailed()
    org.clock.advance(timedelta(days=6).total_seconds())
    again = org.invitations.resend(org.owner, invitation.id)
    assert again.sends == 2 and again.expires_at == org.clock.now() + timedelta(days=7)
    second = org.token_mailed()
    assert org.invitations.preview(first) is None and org.invitations.preview(second) is not None


def test_a_revoked_invitation_no_longer_opens_and_cannot_be_revoked_again(org: Organization) -> None:
    invitation = org.invitations.invite(org.owner, "ana@corp.example")
    token = org.token_mailed()
    assert org.invitations.revoke(org.owner, invitation.id).state(org.clock.now()) == REVOKED
    assert org.invitations.preview(token) is None
    with pytest.raises(rules.Conflict, match="no longer pending"):
        org.invitations.revoke(org.owner, invitation.id)


def test_an_address_already_invited_or_already_a_member_is_not_invited_again(org: Organization) -> None:
    org.invitations.invite(org.owner, "ana@corp.example")
    with pytest.raises(rules.Conflict, match="already has a pending invitation"):
        org.invitations.invite(org.owner, "ANA@corp.example")
    with pytest.raises(rules.Conflict, match="already a member"):
        org.invitations.invite(org.owner, "olive@grove.example")


def test_an_admin_neither_invites_an_owner_nor_sends_an_owners_invitation_again(org: Organization) -> None:
    with pytest.raises(NotAllowed, match="may invite an owner"):
        org.invitations.invite(org.admin, "ana@corp.example", "owner")
    owners = org.invitations.invite(org.owner, "ana@corp.example", "owner")
    with pytest.raises(NotAllowed, match="owner's invitation"):
        org.invitations.resend(org.admin, owners.id)


def test_pending_invitations_are_bounded_and_an_expired_one_leaves_room(org: Organization) -> None:
    org.invitations.invite(org.owner, "ana@corp.example")
    org.invitations.invite(org.owner, "bea@corp.example")
    with pytest.raises(rules.Conflict, match="2 pending invitations, the most"):
        org.invitations.invite(org.owner, "cai@corp.example")
    org.clock.advance(timedelta(days=7).total_seconds())
    org.clock.advance(3600)
    assert org.invitations.invite(org.owner, "cai@corp.example").email == "cai@corp.example"


def test_mails_an_hour_are_bounded_and_the_wait_counts_from_the_oldest_of_the_hour(org: Organization) -> None:
    invitation = org.invitations.invite(org.owner, "ana@corp.example")
    org.clock.advance(600)
    org.invitations.resend(org.owner, invitation.id)
    org.clock.advance(600)
    org.invitations.resend(org.owner, invitation.id)
    org.clock.advance(600)
    with pytest.raises(rules.TooMany) as refused:
        org.invitations.resend(org.owner, invitation.id)
    assert refused.value.retry_after == 1800 + 1
    org.clock.advance(1800)  # the first mail is an hour old: one more may go
    assert org.invitations.resend(org.owner, invitation.id).sends == 4
