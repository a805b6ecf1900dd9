"""The interaction policy: which page a sign-in needs next, as prompts each with its checks.

Modelled on node-oidc-provider's ``interactionPolicy``: a policy is an ordered list of prompts (sign in, choose
an organization, verify the email address, consent); each prompt has checks, each a reason code and a
predicate on the sign-in as it stands. The first check that applies, in the order of the prompts and then of
their checks, names the prompt to show; when none applies, the request is done and a code goes to the client.
Under ``prompt=none`` (OpenID Connect Core §3.1.2.1) a prompt that would show its page ends the request with the
check's error instead. A prompt without a page (a user in no organization) always ends it with its error.

Before its checks, a prompt may settle what needs no page: a user of a single organization is in it without
choosing. Checks are evaluated lazily, in order: the stored consent is read only when no check before it decided.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Protocol

from identity.accounts.users import User
from identity.clients.registry import Client
from identity.common.errors import (
    AccessDenied,
    AccountSelectionRequired,
    ConsentRequired,
    InteractionRequired,
    LoginRequired,
    OAuthError,
)
from identity.interaction.store import Interaction
from identity.sessions.sessions import BrowserSession

SIGN_IN = "sign-in"
SIGN_UP = "sign-up"
SELECT_ORGANIZATION = "select-organization"
CHECK_EMAIL = "check-email"  # the page of a sign-in paused until the user's address is verified
CONSENT = "consent"


class StoredConsents(Protocol):
    def covers(self, user_id: str, client_id: str, org_id: str, scopes: Iterable[str]) -> bool: ...


@dataclass(frozen=True, slots=True)
class Situation:
    """What the checks read: the interaction, its client, its live user and session (None: no session, ended or
    expired, its credential version moved on, or the user unknown or disabled), the time, and the stored consents
    (asked only when a check needs them: it is a query)."""

    interaction: Interaction
    client: Client
    live: tuple[User, BrowserSession] | None
    now: datetime
    consents: StoredConsents

    @property
    def prompt(self) -> frozenset[str]:
        return self.interaction.request.prompt

    @property
    def user(self) -> User:
        """The live user (the checks after the sign-in prompt run only when there is one)."""
        assert self.live is not None
        return self.live[0]

    def changed(self, interaction: Interaction) -> Situation:
        return replace(self, interaction=interaction)


@dataclass(frozen=True, slots=True)
class Check:
    """One reason to show a prompt: its code, what it means, the error under ``prompt=none`` and the predicate."""

    reason: str
    description: str
    error: Callable[[], OAuthError]
    applies: Callable[[Situation], bool]


@dataclass(frozen=True, slots=True)
class Prompt:
    """A page the sign-in may need (``page`` of the situation; None: no page can help, the check's error ends
    the request), what it settles without a page, and its checks in order."""

    name: str
    page: Callable[[Situation], str | None]
    checks: tuple[Check, ...]
    settle: Callable[[Situation], Situation] | None = None


@dataclass(frozen=True, slots=True)
class Needed:
    """The policy's answer: the situation as settled, and the prompt and check that decided (both None: done)."""

    situation: Situation
    prompt: Prompt | None = None
    check: Check | None = None

    @property
    def page(self) -> str | None:
        return None if self.prompt is None else self.prompt.page(self.situation)


@dataclass(frozen=True, slots=True)
class Policy:
    prompts: tuple[Prompt, ...]

    def evaluate(self, situation: Situation) -> Needed:
        """The first prompt one of whose checks applies, in order (each prompt settles first)."""
        for prompt in self.prompts:
            if prompt.settle is not None:
                situation = prompt.settle(situation)
            for check in prompt.checks:
                if check.applies(situation):
                    return Needed(situation, prompt, check)
        return Needed(situation)

    def get(self, name: str) -> Prompt:
        return next(prompt for prompt in self.prompts if prompt.name == name)


# The sign-in prompt (OpenID Connect Core §3.1.2.1: prompt, max_age; "Initiating User Registration": prompt=create)


def _no_session(situation: Situation) -> bool:
    return situation.live is None


def _login_prompt(situation: Situation) -> bool:
    """``prompt=login`` or ``create``: credentials again, unless given during this interaction."""
    return not situation.interaction.signed_in and bool(situation.prompt & {"login", "create"})


def _max_age(situation: Situation) -> bool:
    """A sign-in older than ``max_age`` seconds, unless credentials were given during this interaction."""
    interaction = situation.interaction
    max_age, auth_time = interaction.request.max_age, interaction.auth_time
    if interaction.signed_in or max_age is None or auth_time is None:
        return False
    return (situation.now - auth_time).total_seconds() > max_age


def _sign_in_page(situation: Situation) -> str:
    return SIGN_UP if "create" in situation.prompt else SIGN_IN


# The organization: a user in none gets no code; a user in several chooses one (or everyone under select_account)


def _no_organization(situation: Situation) -> bool:
    return not situation.user.memberships


def _single_organization(situation: Situation) -> Situation:
    """A user in one organization, with none chosen yet and no ``prompt=select_account``, is in it."""
    interaction, user = situation.interaction, situation.user
    if interaction.org_chosen or "select_account" in situation.prompt or len(user.memberships) != 1:
        return situation
    if interaction.org_id and user.membership(interaction.org_id) is not None:
        return situation
    return situation.changed(interaction.changed(org_id=user.memberships[0].org.id))


def _select_account_prompt(situation: Situation) -> bool:
    return not situation.interaction.org_chosen and "select_account" in situation.prompt


def _organization_missing(situation: Situation) -> bool:
    """No organization yet, or the previous session's is no longer the user's."""
    interaction = situation.interaction
    if interaction.org_chosen:
        return False
    return not interaction.org_id or situation.user.membership(interaction.org_id) is None


# The email address: a client registered with --require-verified-email gets no code for an unverified address


def must_verify_email(client: Client, user: User) -> bool:
    return client.require_verified_email and not user.email_verified


def _email_unverified(situation: Situation) -> bool:
    return must_verify_email(situation.client, situation.user)


# Consent. A third-party public client is asked for consent every time: anyone may send its client_id, so a
# consent given once proves nothing about who asks now. RFC 8252 §8.6: the authorization server "SHOULD NOT
# process authorization requests automatically without user consent or interaction, except when the identity of
# the client can be assured"; RFC 6749 §10.2 says the same. A first-party client is asked only under
# prompt=consent.


def _consent_prompt(situation: Situation) -> bool:
    return not situation.interaction.consented and "consent" in situation.prompt


def _public_client(situation: Situation) -> bool:
    client = situation.client
    return not situation.interaction.consented and not client.first_party and client.public


def _scopes_missing(situation: Situation) -> bool:
    interaction, client = situation.interaction, situation.client
    if interaction.consented or client.first_party or client.public:
        return False
    scope = interaction.request.scope
    return not situation.consents.covers(situation.user.id, client.id, interaction.org_id or "", scope)


def _always(page: str | None) -> Callable[[Situation], str | None]:
    return lambda _situation: page


def _error(kind: type[OAuthError], description: str) -> Callable[[], OAuthError]:
    return partial(kind, description)


_LOGIN = _error(LoginRequired, "The user must sign in.")
_SELECT = _error(AccountSelectionRequired, "The user must choose an organization.")
_VERIFY = _error(InteractionRequired, "The user must verify their email address.")
_CONSENT = _error(ConsentRequired, "The user must consent to this application.")

SIGN_IN_POLICY = Policy(
    (
        Prompt(
            "login",
            _sign_in_page,
            (
                Check("no_session", "no live session, or its credential version moved on", _LOGIN, _no_session),
                Check("login_prompt", "prompt=login or create asks for credentials again", _LOGIN, _login_prompt),
                Check("max_age", "the sign-in is older than max_age", _LOGIN, _max_age),
            ),
        ),
        Prompt(
            "organization",
            _always(None),
            (
                Check(
                    "no_organization",
                    "the user belongs to no organization",
                    _error(AccessDenied, "The user belongs to no organization."),
                    _no_organization,
                ),
            ),
        ),
        Prompt(
            "select_organization",
            _always(SELECT_ORGANIZATION),
            (
                Check("select_account_prompt", "prompt=select_account", _SELECT, _select_account_prompt),
                Check("organization_missing", "several organizations and none chosen", _SELECT, _organization_missing),
            ),
            settle=_single_organization,
        ),
        Prompt(
            "verify_email",
            _always(CHECK_EMAIL),
            (Check("email_unverified", "the client requires a verified address", _VERIFY, _email_unverified),),
        ),
        Prompt(
            "consent",
            _always(CONSENT),
            (
                Check("consent_prompt", "prompt=consent", _CONSENT, _consent_prompt),
                Check("public_client", "a third-party public client asks every time", _CONSENT, _public_client),
                Check("scopes_missing", "no stored consent covers the scopes", _CONSENT, _scopes_missing),
            ),
        ),
    )
)
