"""The authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3, OpenID Connect Core §3.1.2.1).

The checks run in order, one small function each. The first two decide whether
the redirect URI can be trusted: until it is, every error is an ``ErrorPage``
(RFC 6749 §4.1.2.1: never redirect to an unverified URI). After it, every error
is an ``OAuthError`` that goes back to the client's redirect URI with
``error``, ``error_description``, ``state`` and ``iss``. Unknown parameters are
ignored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from identity.clients.metadata import redirect_uri_matches
from identity.clients.registry import APPLICATION_SCOPES, Client, ClientStore
from identity.common.errors import (
    ErrorPage,
    InvalidRequest,
    InvalidScope,
    OAuthError,
    RequestNotSupported,
    RequestUriNotSupported,
    UnauthorizedClient,
    UnsupportedResponseType,
)
from identity.tokens.pkce import CHALLENGE, METHOD

PROMPTS = ("login", "consent", "create", "select_account", "none")
PARAMETERS = frozenset(  # the parameters this provider reads; any other is ignored
    "client_id redirect_uri response_type response_mode scope state nonce code_challenge"
    " code_challenge_method prompt max_age login_hint domain_hint ui_locales request request_uri invitation".split()
)
MAX_PARAMETER_LENGTH = 2048  # longer values are refused rather than stored


@dataclass(frozen=True, slots=True)
class AuthorizationRequest:
    client_id: str
    redirect_uri: str
    scope: tuple[str, ...]
    state: str | None = None
    nonce: str | None = None
    code_challenge: str | None = None
    prompt: frozenset[str] = field(default_factory=frozenset)
    max_age: int | None = None
    login_hint: str | None = None
    # this provider's own parameter: the token of an invitation to an organization (identity/organizations/), kept
    # only as its SHA-256; signing up in this sign-in joins that organization instead of making one
    invitation: str | None = None
    domain_hint: str | None = None  # an email domain whose organization's provider signs the user in (federation)

    def as_dict(self) -> dict[str, Any]:
        return {
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "scope": list(self.scope),
            "state": self.state,
            "nonce": self.nonce,
            "code_challenge": self.code_challenge,
            "prompt": sorted(self.prompt),
            "max_age": self.max_age,
            "login_hint": self.login_hint,
            "invitation": self.invitation,
            "domain_hint": self.domain_hint,
        }

    def again(self, authorization_endpoint: str) -> str:
        """This request as a URL of ``authorization_endpoint``, to start its sign-in again, without its ``prompt``
        (the account exists by then, and the user signs in as usual): where the last page of a mailed link's flow
        links back to. Its client, redirect URI, scope, state, nonce and PKCE challenge are the ones the client
        sent, so the client finishes the sign-in it began; the endpoint checks them all again."""
        params = {"response_type": "code", "client_id": self.client_id, "redirect_uri": self.redirect_uri}
        params["scope"] = " ".join(self.scope)
        optional = {
            "state": self.state,
            "nonce": self.nonce,
            "login_hint": self.login_hint,
            "domain_hint": self.domain_hint,
        }
        params.update({name: value for name, value in optional.items() if value is not None})
        if self.code_challenge is not None:
            params.update(code_challenge=self.code_challenge, code_challenge_method=METHOD)
        if self.max_age is not None:
            params["max_age"] = str(self.max_age)
        return f"{authorization_endpoint}?{urlencode(params)}"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AuthorizationRequest:
        return cls(
            client_id=data["client_id"],
            redirect_uri=data["redirect_uri"],
            scope=tuple(data["scope"]),
            state=data["state"],
            nonce=data["nonce"],
            code_challenge=data["code_challenge"],
            prompt=frozenset(data["prompt"]),
            max_age=data["max_age"],
            login_hint=data["login_hint"],
            invitation=data.get("invitation"),  # absent from interactions stored before invitations
            domain_hint=data.get("domain_hint"),  # absent from the interactions stored before it existed
        )


class RedirectableError(Exception):
    """An ``OAuthError`` for a request whose redirect URI is trusted: answer with a redirect."""

    def __init__(self, error: OAuthError, redirect_uri: str, state: str | None) -> None:
        super().__init__(error.description)
        self.error = error
        self.redirect_uri = redirect_uri
        self.state = state


@dataclass
class _Draft:
    params: dict[str, list[str]]
    client: Client | None = None
    redirect_uri: str = ""
    scope: tuple[str, ...] = ()
    code_challenge: str | None = None
    prompt: frozenset[str] = frozenset()
    max_age: int | None = None
    public_clients: bool = False  # MENUS_PUBLIC_CLIENTS: whether public clients are known on this node

    def one(self, name: str) -> str | None:
        values = self.params.get(name)
        return values[0] if values else None


# Before the redirect URI is trusted: errors are pages.


def check_client(draft: _Draft, clients: ClientStore) -> None:
    client_id = draft.params.get("client_id", [])
    if len(client_id) != 1 or not client_id[0]:
        raise ErrorPage("Unknown application", "The sign-in request does not name one application (client_id).")
    client = clients.get(client_id[0]) if len(client_id[0]) <= 64 else None
    if client is None:
        raise ErrorPage("Unknown application", "No application is registered with this client_id.")
    if client.public and not draft.public_clients:
        raise ErrorPage(
            "Unknown application",
            "This application is a browser or native app (a public client), and this service does not accept them.",
            detail=f"Client {client.id} is public, and MENUS_PUBLIC_CLIENTS is off on this node.",
        )
    draft.client = client


def check_redirect_uri(draft: _Draft, clients: ClientStore) -> None:
    """RFC 6749 §3.1.2.3 and OpenID Connect Core §3.1.2.1: an exact match with a registered URI
    (RFC 8252 §7.3: a loopback IP literal's port may differ)."""
    assert draft.client is not None
    uris = draft.params.get("redirect_uri", [])
    if len(uris) != 1 or not any(redirect_uri_matches(uri, uris[0]) for uri in draft.client.redirect_uris):
        raise ErrorPage(
            "Unregistered redirect URI",
            "The sign-in request's redirect_uri is missing or is not registered for this application.",
        )
    draft.redirect_uri = uris[0]


# After it: errors redirect.


def check_no_repeats(draft: _Draft, clients: ClientStore) -> None:
    """RFC 6749 §3.1: request parameters must not be included more than once."""
    for name, values in draft.params.items():
        if name not in PARAMETERS:
            continue
        if len(values) > 1:
            raise InvalidRequest(f"The parameter {name} is repeated.")
        if len(values[0]) > MAX_PARAMETER_LENGTH:
            raise InvalidRequest(f"The parameter {name} is too long.")


def check_request_objects(draft: _Draft, clients: ClientStore) -> None:
    """OpenID Connect Core §6: request objects are not supported."""
    if "request" in draft.params:
        raise RequestNotSupported("Request objects are not supported.")
    if "request_uri" in draft.params:
        raise RequestUriNotSupported("The request_uri parameter is not supported.")


def check_response_type(draft: _Draft, clients: ClientStore) -> None:
    response_type = draft.one("response_type")
    if not response_type:
        raise InvalidRequest("The parameter response_type is missing.")
    if response_type != "code":
        raise UnsupportedResponseType("Only the response_type code is supported.")
    if draft.one("response_mode") not in (None, "query"):
        raise InvalidRequest("Only the response_mode query is supported.")


def check_grant(draft: _Draft, clients: ClientStore) -> None:
    assert draft.client is not None
    if "authorization_code" not in draft.client.grants:
        raise UnauthorizedClient("This client may not use the authorization code flow.")


def check_scope(draft: _Draft, clients: ClientStore) -> None:
    """OpenID Connect Core §3.1.2.1: ``openid`` is required; unknown and unallowed scopes are dropped."""
    assert draft.client is not None
    asked = (draft.one("scope") or "").split()
    if "openid" not in asked:
        raise InvalidScope("The scope must include openid.")
    allowed = set(draft.client.scopes) - APPLICATION_SCOPES
    draft.scope = tuple(dict.fromkeys(s for s in asked if s in allowed or s == "openid"))


def check_pkce(draft: _Draft, clients: ClientStore) -> None:
    """RFC 7636 §4.3: S256 only; a challenge without a method means ``plain``, which is refused.

    RFC 9700 §2.1.1: "Public clients MUST use PKCE [RFC7636]": a public client's request without a
    challenge is refused whatever its registration says."""
    assert draft.client is not None
    challenge, method = draft.one("code_challenge"), draft.one("code_challenge_method")
    if challenge is None:
        if method is not None:
            raise InvalidRequest("code_challenge_method was sent without a code_challenge.")
        if draft.client.pkce_required or draft.client.public:
            raise InvalidRequest("PKCE is required: send code_challenge and code_challenge_method=S256.")
        return
    if method != METHOD:
        raise InvalidRequest("The code_challenge_method must be S256.")
    if not CHALLENGE.fullmatch(challenge):
        raise InvalidRequest("The code_challenge must be 43 base64url characters (S256).")
    draft.code_challenge = challenge


def check_prompt(draft: _Draft, clients: ClientStore) -> None:
    """OpenID Connect Core §3.1.2.1: ``none`` must stand alone."""
    values = frozenset((draft.one("prompt") or "").split())
    unknown = sorted(values - set(PROMPTS))
    if unknown:
        raise InvalidRequest(f"The prompt value {unknown[0]} is not supported.")
    if "none" in values and len(values) > 1:
        raise InvalidRequest("prompt=none cannot be combined with other values.")
    if "create" in values and values & {"login", "select_account"}:
        raise InvalidRequest("prompt=create cannot be combined with login or select_account.")
    draft.prompt = values


def check_max_age(draft: _Draft, clients: ClientStore) -> None:
    value = draft.one("max_age")
    if value is None:
        return
    if not value.isascii() or not value.isdigit() or len(value) > 10:
        raise InvalidRequest("max_age must be a non-negative whole number of seconds.")
    draft.max_age = int(value)


CHECKS: Sequence[Callable[[_Draft, ClientStore], None]] = (
    check_client,
    check_redirect_uri,
    check_no_repeats,
    check_request_objects,
    check_response_type,
    check_grant,
    check_scope,
    check_pkce,
    check_prompt,
    check_max_age,
)
TRUSTED_AFTER = check_redirect_uri  # from the next check on, errors may redirect


def parse_request(
    pairs: Sequence[tuple[str, str]], clients: ClientStore, *, public_clients: bool = False
) -> tuple[AuthorizationRequest, Client]:
    """Run every check in order; raise ``ErrorPage`` or ``RedirectableError``. ``public_clients``: whether
    this node accepts public clients (elsewhere their requests get an error page)."""
    params: dict[str, list[str]] = {}
    for name, value in pairs:
        if value != "":  # OAuth 2.0 §3.1: parameters sent without a value are treated as omitted
            params.setdefault(name, []).append(value)
    draft = _Draft(params, public_clients=public_clients)
    trusted = False
    for check in CHECKS:
        try:
            check(draft, clients)
        except OAuthError as error:
            if not trusted:
                raise ErrorPage("Invalid sign-in request", error.description, detail=error.detail) from None
            states = [state for state in params.get("state", []) if len(state) <= MAX_PARAMETER_LENGTH]
            raise RedirectableError(error, draft.redirect_uri, states[0] if len(states) == 1 else None) from None
        trusted = trusted or check is TRUSTED_AFTER
    assert draft.client is not None
    request = AuthorizationRequest(
        client_id=draft.client.id,
        redirect_uri=draft.redirect_uri,
        scope=draft.scope,
        state=draft.one("state"),
        nonce=draft.one("nonce"),
        code_challenge=draft.code_challenge,
        prompt=draft.prompt,
        max_age=draft.max_age,
        login_hint=draft.one("login_hint"),
        invitation=invitation_hash(draft.one("invitation")),
        domain_hint=draft.one("domain_hint"),
    )
    return request, draft.client


def invitation_hash(token: str | None) -> str | None:
    """The SHA-256 of an invitation's token (as identity/organizations/invitations.py keeps it); None for none, or
    for a value too long to be one (ignored, as an unknown parameter is)."""
    if token is None or len(token) > 100:
        return None
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def redirect_with(redirect_uri: str, params: dict[str, str | None]) -> str:
    """``redirect_uri`` with response parameters added to its query (RFC 6749 §4.1.2: keep its own query)."""
    parts = urlsplit(redirect_uri)
    query = parse_qsl(parts.query, keep_blank_values=True)
    query += [(name, value) for name, value in params.items() if value is not None]
    return urlunsplit(parts._replace(query=urlencode(query)))
