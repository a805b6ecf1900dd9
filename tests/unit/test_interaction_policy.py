"""The interaction policy of the browser sign-in (identity/interaction/policy.py): which check of which prompt
decides the page a sign-in needs next, in which order the prompts are asked, and the error each gives under
``prompt=none``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from identity.accounts.organizations import Organization
from identity.accounts.users import Membership, User
from identity.clients.registry import Client
from identity.common.errors import (
    AccessDenied,
    AccountSelectionRequired,
    ConsentRequired,
    InteractionRequired,
    LoginRequired,
    OAuthError,
)
from identity.common.issuer import Issuer
from identity.interaction.authorization_request import AuthorizationRequest
from identity.interaction.policy import (
    CHECK_EMAIL,
    CONSENT,
    SELECT_ORGANIZATION,
    SIGN_IN,
    SIGN_IN_POLICY,
    SIGN_UP,
    Situation,
)
from identity.interaction.steps import Steps
from identity.interaction.store import Interaction
from identity.sessions.sessions import BrowserSession
from tests.support.loops import each

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
ACME = Organization("org_acme", "Acme", "acme")
GLOBEX = Organization("org_globex", "Globex", "globex")


@dataclass
class Consents:
    """Stored consents: whether they cover the request, and how often they were asked (each ask is a query)."""

    cover: bool = True
    asked: list[tuple[str, str, str, tuple[str, ...]]] = field(default_factory=list)

    def covers(self, user_id: str, client_id: str, org_id: str, scopes: Iterable[str]) -> bool:
        self.asked.append((user_id, client_id, org_id, tuple(scopes)))
        return self.cover


def member(*orgs: Organization) -> tuple[Membership, ...]:
    return tuple(Membership(org, "member", NOW - timedelta(days=30)) for org in orgs)


def client(**changes: Any) -> Client:
    made = Client(
        id="cli_web",
        org_id=ACME.id,
        name="Web",
        auth_method="client_secret_basic",
        redirect_uris=("https://app.example/cb",),
        post_logout_redirect_uris=(),
        grants=("authorization_code",),
        scopes=("openid", "profile"),
        first_party=False,
        pkce_required=True,
        jwks=None,
        secret_hash="x",
    )
    return replace(made, **changes)


def situation(
    *,
    prompt: Iterable[str] = (),
    max_age: int | None = None,
    signed_in: bool = False,
    auth_age: timedelta = timedelta(minutes=5),
    live: bool = True,
    orgs: tuple[Organization, ...] = (ACME,),
    org_id: str | None = ACME.id,
    org_chosen: bool = False,
    consented: bool = False,
    email_verified: bool = True,
    consents: Consents | None = None,
    **client_changes: Any,
) -> Situation:
    """A sign-in of a live user of Acme, signed in five minutes ago, whose consent covers the request: nothing is
    needed unless a keyword says otherwise."""
    request = AuthorizationRequest(
        "cli_web", "https://app.example/cb", ("openid", "profile"), prompt=frozenset(prompt), max_age=max_age
    )
    user = User("usr_1", "ada@example.com", "Ada", member(*orgs), email_verified=email_verified)
    session = BrowserSession("ses_1", user.id, org_id, NOW - auth_age, NOW + timedelta(hours=8))
    interaction = Interaction(
        id="int_1",
        browser_hash="h",
        csrf_token="t",
        request=request,
        expires_at=NOW + timedelta(minutes=10),
        user_id=user.id,
        session_id=session.id,
        auth_time=session.auth_time,
        org_id=org_id,
        signed_in=signed_in,
        org_chosen=org_chosen,
        consented=consented,
    )
    live_pair = (user, session) if live else None
    return Situation(interaction, client(**client_changes), live_pair, NOW, consents or Consents())


# Each row: the situation, and the prompt and check that decide it (None: nothing is needed, a code follows).
CASES: list[tuple[str, Situation, tuple[str, str] | None]] = [
    ("nothing missing: a code", situation(), None),
    ("no live session", situation(live=False), ("login", "no_session")),
    ("prompt=login asks for credentials", situation(prompt={"login"}), ("login", "login_prompt")),
    ("prompt=create asks for them too", situation(prompt={"create"}), ("login", "login_prompt")),
    ("prompt=login after signing in here: done", situation(prompt={"login"}, signed_in=True), None),
    ("max_age exceeded", situation(max_age=60), ("login", "max_age")),
    ("max_age not yet exceeded", situation(max_age=600), None),
    ("max_age after signing in here", situation(max_age=60, signed_in=True), None),
    ("a user in no organization", situation(orgs=(), org_id=None), ("organization", "no_organization")),
    (
        "prompt=select_account",
        situation(prompt={"select_account"}),
        ("select_organization", "select_account_prompt"),
    ),
    ("select_account once chosen: done", situation(prompt={"select_account"}, org_chosen=True), None),
    (
        "several organizations, none chosen",
        situation(orgs=(ACME, GLOBEX), org_id=None),
        ("select_organization", "organization_missing"),
    ),
    (
        "several, the previous one no longer the user's",
        situation(orgs=(ACME, GLOBEX), org_id="org_gone"),
        ("select_organization", "organization_missing"),
    ),
    ("several, the session's one still the user's", situation(orgs=(ACME, GLOBEX)), None),
    ("a single organization needs no choice", situation(org_id=None), None),
    (
        "unverified address, the client requires it",
        situation(email_verified=False, require_verified_email=True),
        ("verify_email", "email_unverified"),
    ),
    ("unverified address, the client does not require it", situation(email_verified=False), None),
    ("prompt=consent", situation(prompt={"consent"}), ("consent", "consent_prompt")),
    (
        "prompt=consent of a first-party client",
        situation(prompt={"consent"}, first_party=True),
        ("consent", "consent_prompt"),
    ),
    ("prompt=consent once consented: done", situation(prompt={"consent"}, consented=True), None),
    ("a third-party public client", situation(auth_method="none"), ("consent", "public_client")),
    ("a first-party public client", situation(auth_method="none", first_party=True), None),
    ("scopes not covered", situation(consents=Consents(cover=False)), ("consent", "scopes_missing")),
    ("scopes not covered, first-party", situation(consents=Consents(cover=False), first_party=True), None),
    ("scopes not covered, consented here", situation(consents=Consents(cover=False), consented=True), None),
]


@pytest.mark.parametrize(("situation_", "decided"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_each_check_decides_its_prompt(situation_: Situation, decided: tuple[str, str] | None) -> None:
    needed = SIGN_IN_POLICY.evaluate(situation_)
    found = None if needed.prompt is None else (needed.prompt.name, needed.check.reason if needed.check else "")
    assert found == decided


def test_the_prompts_are_asked_in_order_sign_in_organization_email_consent() -> None:
    assert [prompt.name for prompt in SIGN_IN_POLICY.prompts] == [
        "login",
        "organization",
        "select_organization",
        "verify_email",
        "consent",
    ]
    assert [check.reason for check in SIGN_IN_POLICY.get("login").checks] == ["no_session", "login_prompt", "max_age"]
    assert [check.reason for check in SIGN_IN_POLICY.get("consent").checks] == [
        "consent_prompt",
        "public_client",
        "scopes_missing",
    ]


def test_the_first_prompt_that_applies_wins_over_every_later_one() -> None:
    """Everything is missing at once: the sign-in comes first, then the organization, the address, the consent."""
    everything: dict[str, Any] = {
        "orgs": (ACME, GLOBEX),
        "org_id": None,
        "email_verified": False,
        "require_verified_email": True,
        "consents": Consents(cover=False),
    }
    chosen = {**everything, "org_id": GLOBEX.id, "org_chosen": True}
    assert SIGN_IN_POLICY.evaluate(situation(prompt={"login"}, **everything)).page == SIGN_IN
    assert SIGN_IN_POLICY.evaluate(situation(**everything)).page == SELECT_ORGANIZATION
    assert SIGN_IN_POLICY.evaluate(situation(**chosen)).page == CHECK_EMAIL
    assert SIGN_IN_POLICY.evaluate(situation(**{**chosen, "email_verified": True})).page == CONSENT


def test_the_sign_in_prompt_shows_the_sign_up_page_under_prompt_create() -> None:
    assert SIGN_IN_POLICY.evaluate(situation(live=False)).page == SIGN_IN
    assert SIGN_IN_POLICY.evaluate(situation(prompt={"create"})).page == SIGN_UP


def test_a_user_in_no_organization_has_no_page_to_show() -> None:
    needed = SIGN_IN_POLICY.evaluate(situation(orgs=(), org_id=None))
    assert needed.page is None


def test_a_single_organization_is_chosen_without_asking_and_the_consent_is_read_for_it() -> None:
    consents = Consents()
    needed = SIGN_IN_POLICY.evaluate(situation(org_id=None, consents=consents))
    assert needed.prompt is None
    assert needed.situation.interaction.org_id == ACME.id and not needed.situation.interaction.org_chosen
    assert consents.asked == [("usr_1", "cli_web", ACME.id, ("openid", "profile"))]


def test_prompt_select_account_chooses_no_single_organization_by_itself() -> None:
    needed = SIGN_IN_POLICY.evaluate(situation(prompt={"select_account"}, org_id=None))
    assert needed.page == SELECT_ORGANIZATION and needed.situation.interaction.org_id is None


def test_the_stored_consent_is_read_only_when_no_earlier_check_decided() -> None:
    for decided_before in (
        situation(live=False),
        situation(prompt={"consent"}),
        situation(auth_method="none"),
        situation(first_party=True),
        situation(consented=True),
    ):
        consents = Consents()
        SIGN_IN_POLICY.evaluate(replace(decided_before, consents=consents))
        assert consents.asked == []


ERRORS: list[tuple[str, type[OAuthError], str]] = [
    ("login", LoginRequired, "The user must sign in."),
    ("organization", AccessDenied, "The user belongs to no organization."),
    ("select_organization", AccountSelectionRequired, "The user must choose an organization."),
    ("verify_email", InteractionRequired, "The user must verify their email address."),
    ("consent", ConsentRequired, "The user must consent to this application."),
]


@pytest.mark.parametrize(("prompt", "kind", "description"), ERRORS, ids=[row[0] for row in ERRORS])
def test_each_prompts_checks_give_its_error_under_prompt_none(
    prompt: str, kind: type[OAuthError], description: str
) -> None:
    for check in each(SIGN_IN_POLICY.get(prompt).checks):
        error = check.error()
        assert type(error) is kind and error.description == description


@dataclass
class Frozen:
    at: datetime = NOW

    def now(self) -> datetime:
        return self.at


@dataclass
class LiveUser:
    """The pending interactions' live user, as the situation to evaluate has it."""

    live: tuple[User, BrowserSession] | None

    def live_user(self, interaction: Interaction) -> tuple[User, BrowserSession] | None:
        return self.live


def next_step(situation_: Situation) -> tuple[str | None, Interaction, BrowserSession | None]:
    steps = Steps(
        issuer=Issuer("https://id.example"),
        pending=LiveUser(situation_.live),  # type: ignore[arg-type]
        interactions=None,  # type: ignore[arg-type]
        consents=situation_.consents,
        codes=None,  # type: ignore[arg-type]
        mail=None,  # type: ignore[arg-type]
        clock=Frozen(),
    )
    return steps.next_step(situation_.interaction, situation_.client)


def test_a_sign_in_that_needs_a_page_is_sent_to_it() -> None:
    page, interaction, session = next_step(situation(orgs=(ACME, GLOBEX), org_id=None))
    assert page == SELECT_ORGANIZATION and session is not None and interaction.org_id is None
    assert next_step(situation())[0] is None


@pytest.mark.parametrize(
    ("situation_", "kind"),
    [
        (situation(live=False, prompt={"none"}), LoginRequired),
        (situation(orgs=(ACME, GLOBEX), org_id=None, prompt={"none"}), AccountSelectionRequired),
        (situation(email_verified=False, require_verified_email=True, prompt={"none"}), InteractionRequired),
        (situation(consents=Consents(cover=False), prompt={"none"}), ConsentRequired),
        (situation(orgs=(), org_id=None), AccessDenied),
    ],
    ids=["login", "select organization", "verify email", "consent", "no organization, whatever the prompt"],
)
def test_prompt_none_ends_the_request_with_the_checks_error_instead_of_its_page(
    situation_: Situation, kind: type[OAuthError]
) -> None:
    with pytest.raises(kind):
        next_step(situation_)
