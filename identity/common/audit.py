"""Security events: one line each on the ``regional_menus.audit`` logger, and to whoever listens (the metrics).

The domain records an event where it happens, with ids only: who (user, client, organization,
API key), what (grant type, token type, key id) and why (a reason from a short list). A field
outside ``FIELDS`` is refused, so a password, a secret, a token, a code, an email address or free
text cannot be logged by mistake: none of them is a field. Identifiers that are not bearer
credentials (a token's ``jti``, an authorization's ``grant_id``) are fields; tokens are not.

A failed sign-in names the account only by its user id, and only when the address belongs to an
account: a typed address is never logged (people type passwords into the email field; OWASP's
Logging Cheat Sheet), and a keyed hash would add a secret to manage for little gain, since the
throttle already counts attempts per address.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

log = logging.getLogger("regional_menus.audit")

SUCCESS, FAILURE, DENIED = "success", "failure", "denied"

SIGN_IN = "sign_in"  # failure reasons: unknown_account, wrong_password, throttled, disabled, credential_changed
SIGN_UP = "sign_up"  # failure reasons: throttled, account_exists, federated_domain (sent to its provider)
CONSENT = "consent"  # success: granted; denied: the user refused
TOKEN_ISSUED = "token_issued"
REFRESH_TOKEN_REUSE = "refresh_token_reuse"  # a rotated refresh token presented again: its family is revoked
CODE_REPLAY = "code_replay"  # an authorization code presented again: its tokens are revoked
TOKEN_REVOKED = "token_revoked"  # failure reason: unknown_token (nothing of the caller's was revoked)
SIGN_OUT = "sign_out"
KEY_ROTATED = "key_rotated"
SECRETS_ROTATED = "secrets_rotated"  # signing keys and service secrets sealed again with the first secret key
API_KEY_CREATED = "api_key_created"
API_KEY_REVOKED = "api_key_revoked"
EMAIL_VERIFIED = "email_verified"  # a verification link was followed (or users verify-email)
PASSWORD_RESET = "password_reset"  # success: the password was replaced and every session and token ended
USER_DISABLED = "user_disabled"  # `users disable`: every session and token of the user ended
USER_ENABLED = "user_enabled"  # `users enable`: the user may sign in again
# a change of an organization by its members or clients (identity/organizations/trail.py): reason is its kind
ORGANIZATION_CHANGED = "organization_changed"
# Federation (identity/federation/): a sign-in through an organization's provider (failure: the provider's answer
# failed; denied reasons: no_email, bad_email, domain_not_claimed, upstream_unverified, local_unverified, disabled),
# an account linked to or made for a provider's account (reason: linked or created), a logout token received
# (failure: invalid_token, replayed), a domain claimed, a connection saved or deleted
FEDERATED_SIGN_IN = "federated_sign_in"
FEDERATED_LINK = "federated_link"
FEDERATED_LOGOUT = "federated_logout"
DOMAIN_CLAIMED = "domain_claimed"
CONNECTION_SAVED = "connection_saved"
EVENTS = (
    SIGN_IN,
    SIGN_UP,
    CONSENT,
    TOKEN_ISSUED,
    REFRESH_TOKEN_REUSE,
    CODE_REPLAY,
    TOKEN_REVOKED,
    SIGN_OUT,
    KEY_ROTATED,
    SECRETS_ROTATED,
    API_KEY_CREATED,
    API_KEY_REVOKED,
    EMAIL_VERIFIED,
    PASSWORD_RESET,
    USER_DISABLED,
    USER_ENABLED,
    ORGANIZATION_CHANGED,
    FEDERATED_SIGN_IN,
    FEDERATED_LINK,
    FEDERATED_LOGOUT,
    DOMAIN_CLAIMED,
    CONNECTION_SAVED,
)
FIELDS = frozenset(
    {
        "user_id",
        "client_id",
        "org_id",
        "session_id",
        "grant_id",
        "grant_type",
        "jti",
        "token_type",
        "scope",
        "key_id",
        "kid",
        "reason",
        "subject_id",  # the id of the record an organization_changed event acted on
    }
)

Listener = Callable[[str, str, Mapping[str, object]], None]
_listeners: list[Listener] = []


def listen(listener: Listener) -> None:
    """Call ``listener(event, outcome, fields)`` on every event from now on (once, however often it is added)."""
    if listener not in _listeners:
        _listeners.append(listener)


def record(event: str, outcome: str = SUCCESS, **fields: str | None) -> None:
    """Log ``event`` with its ``outcome`` and the ``fields`` that are set; tell the listeners. (An event that
    waits for a transaction is kept by its unit of work instead: ``identity.tokens.unit_of_work.UnitOfWork.record``.)"""
    write(event, outcome, checked(event, fields))


def checked(event: str, fields: Mapping[str, str | None]) -> Mapping[str, str]:
    """The fields of ``event`` that are set; ValueError for an unknown event or a field that is not an id."""
    if event not in EVENTS:
        raise ValueError(f"unknown audit event {event!r}")
    unknown = set(fields) - FIELDS
    if unknown:
        raise ValueError(f"audit events carry ids only, not {sorted(unknown)}")
    return {name: value for name, value in fields.items() if value is not None}


def write(event: str, outcome: str, present: Mapping[str, str]) -> None:
    """Log one checked event and tell the listeners."""
    log.info("%s %s", event, outcome, extra={"fields": {"event": event, "outcome": outcome, **present}})
    for listener in _listeners:
        listener(event, outcome, present)
