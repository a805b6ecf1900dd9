"""The management API's HTTP side: the access token in, JSON and problems out.

Every operation authenticates its bearer token first (``actor``): an access token of this issuer, issued to a
client of the organization with ``client_credentials`` (no user), carrying the operation's management scope,
whose client still exists. The token's organization is the only one reached: a record of another is 404.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import orjson
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from cursors import InvalidCursor
from identity.api_keys.console_rules import NotAllowed
from identity.api_keys.keys import KeyLimitReached
from identity.clients.registry import ClientStore
from identity.common.errors import InvalidInput, InvalidToken, MalformedBearerRequest
from identity.federation.administration import ConnectionAdministration
from identity.federation.connections import DEFAULT_SCOPES, ConnectionForm
from identity.federation.errors import FederationError
from identity.organizations import applications as apps
from identity.organizations import keys as org_keys
from identity.organizations import rules
from identity.organizations.actors import Actor
from identity.organizations.applications import Applications, Changes, Registration
from identity.organizations.idempotency import Answer, IdempotencyKeys, KeyReused
from identity.organizations.invitations import Invitations
from identity.organizations.keys import OrganizationKeys
from identity.organizations.members import Members
from identity.organizations.trail import Trail
from identity.tokens.bearer_tokens import bearer_credentials
from identity.tokens.verification import AccessToken, TokenVerifier
from service.web.link_header import next_link
from service.web.offload import in_thread
from service.web.problems import Problem
from service.web.request_reading import browser
from service.web.request_state import Slot

T = TypeVar("T")

MEMBERS, CLIENTS, KEYS, AUDIT = "manage:members", "manage:clients", "manage:keys", "manage:audit"
CONNECTION = "manage:connection"
DISCOVERY_RETRY_AFTER = 60  # seconds: discovery fetches are bounded per minute (identity/federation/connections.py)
REALM = 'Bearer realm="management"'
JSON = "application/json"


class ManagementWeb:
    def __init__(
        self,
        *,
        url: str,
        verifier: TokenVerifier,
        clients: ClientStore,
        members: Members,
        invitations: Invitations,
        applications: Applications,
        keys: OrganizationKeys,
        journal: Trail,
        idempotency: IdempotencyKeys,
        connection: ConnectionAdministration | None = None,
    ) -> None:
        self.url = url  # the API's public URL: {MENUS_BASE_URL}/management/v1
        self.verifier = verifier
        self.clients = clients
        self.members = members
        self.invitations = invitations
        self.applications = applications
        self.keys = keys
        self.trail = journal
        self.idempotency = idempotency
        self.connection = connection  # the organization's identity provider connection (manage:connection)

    # Authentication

    def verified(self, authorization: str | None) -> AccessToken:
        """The live access token of this issuer the request carries, whose client is still the organization's;
        401 problems else. Checked before anything else (``management_app``): a request without one learns
        nothing of the API, not even whether its parameters are valid."""
        credentials = bearer_credentials(authorization)
        if credentials is None:
            raise Problem(401, "unauthorized", "An access token is required.", headers={"WWW-Authenticate": REALM})
        try:
            access = self.verifier.verify_access_token(credentials)
        except (InvalidToken, MalformedBearerRequest):
            raise _invalid_token() from None
        client = self.clients.get(access.client_id)
        if client is None or client.org_id != access.org_id:
            raise _invalid_token()
        return access

    def actor(self, request: Request, scope: str) -> Actor:
        """The client the token was issued to, acting on its organization; 401 or 403 problems else."""
        access = CALLER.find(request.scope) or self.verified(request.headers.get("authorization"))
        if access.user_id is not None:
            raise Problem(
                403,
                "forbidden",
                "This token was issued for a user; the management API takes a client_credentials token of one of "
                "the organization's clients.",
                headers={"WWW-Authenticate": f'{REALM}, error="insufficient_scope", scope="{scope}"'},
            )
        if scope not in access.scope:
            raise Problem(
                403,
                "forbidden",
                f"This token lacks the scope {scope}.",
                headers={"WWW-Authenticate": f'{REALM}, error="insufficient_scope", scope="{scope}"'},
            )
        return Actor.client(access.client_id, access.org_id, browser(request).address)

    async def run(self, request: Request, scope: str, call: Callable[[Actor], T]) -> T:
        def work() -> T:
            return call(self.actor(request, scope))

        return await in_thread(work)

    # Shapes

    def page(
        self,
        path: str,
        data: list[dict[str, Any]],
        total: int | None,
        next_cursor: str | None,
        parameters: Mapping[str, object],
    ) -> Response:
        document: dict[str, Any] = {"data": data, "next_cursor": next_cursor}
        if total is not None:
            document["total"] = total
        headers = {"Cache-Control": "no-store"}
        if next_cursor is not None:
            headers["Link"] = next_link(self.url + path, parameters.items(), next_cursor)
        return json_response(document, headers=headers)

    def created(self, answer: Answer, location: str, etag: str | None = None) -> Response:
        headers = {"Location": location, "Cache-Control": "no-store"}
        if etag is not None:
            headers["ETag"] = etag
        if answer.replayed:
            headers["Idempotent-Replayed"] = "true"
        return json_response(answer.body, answer.status, headers)

    def location(self, path: str) -> str:
        """The path of a new record (relative to the host: ``Location`` may be a reference, RFC 9110 §10.2.2)."""
        base = self.url.split("/", 3)[3] if self.url.count("/") >= 3 else ""
        return "/" + base.strip("/") + path if base else path

    # Members and invitations

    def registration(self, body: Mapping[str, Any]) -> Registration:
        return Registration(
            name=body["name"],
            auth_method=body["token_endpoint_auth_method"],
            redirect_uris=tuple(body.get("redirect_uris", ())),
            post_logout_redirect_uris=tuple(body.get("post_logout_redirect_uris", ())),
            web_origins=tuple(body.get("web_origins", ())),
            backchannel_logout_uri=body.get("backchannel_logout_uri"),
            backchannel_logout_session_required=bool(body.get("backchannel_logout_session_required", False)),
            grants=tuple(body.get("grant_types", ())),
            scopes=tuple(body.get("scopes", ())),
            jwks=body.get("jwks"),
        )

    @staticmethod
    def connection_form(body: Mapping[str, Any]) -> ConnectionForm:
        """The contract's ``ConnectionSettings``: a secret left out keeps the stored one; ``domains`` null covers
        every claimed domain."""
        return ConnectionForm(
            issuer=body["issuer"],
            client_id=body["client_id"],
            client_secret=body.get("client_secret"),
            scopes=body.get("scopes") or DEFAULT_SCOPES,
            default_role=body.get("default_role", "member"),
            sso_required=bool(body.get("sso_required", False)),
            domains=body.get("domains"),
        )

    @staticmethod
    def changes(body: Mapping[str, Any]) -> Changes:
        backchannel = body.get("backchannel_logout_uri", None) if "backchannel_logout_uri" in body else None
        if "backchannel_logout_uri" in body and body["backchannel_logout_uri"] is None:
            backchannel = ""  # null removes it
        return Changes(
            name=body.get("name"),
            redirect_uris=body.get("redirect_uris"),
            post_logout_redirect_uris=body.get("post_logout_redirect_uris"),
            web_origins=body.get("web_origins"),
            backchannel_logout_uri=backchannel,
            backchannel_logout_session_required=body.get("backchannel_logout_session_required"),
            changed=tuple(sorted(body)),
        )


def json_response(document: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(document), status_code=status, headers=headers, media_type=JSON)


def if_match(request: Request, *, required: bool) -> str | None:
    value = request.headers.get("if-match")
    if value is None and required:
        raise Problem(428, "precondition_required", "This change needs If-Match with the record's ETag.")
    return value.strip() if value is not None else None


def idempotency_key(request: Request) -> str | None:
    return request.headers.get("idempotency-key")


def _invalid_token() -> Problem:
    return Problem(
        401,
        "unauthorized",
        "The access token is invalid, expired or revoked.",
        headers={"WWW-Authenticate": f'{REALM}, error="invalid_token"'},
    )


def problem_of(error: Exception) -> Problem | None:
    """The domain's refusals as the management API's problems (the one place they are mapped)."""
    if isinstance(error, NotAllowed):
        return Problem(403, "forbidden", str(error))
    if isinstance(error, rules.Unknown):
        return Problem(404, "not_found", str(error))
    if isinstance(error, rules.Conflict | KeyLimitReached):
        text = str(error)
        return Problem(409, "conflict", text[:1].upper() + text[1:] + ("" if text.endswith(".") else "."))
    if isinstance(error, rules.Stale):
        return Problem(412, "precondition_failed", str(error))
    if isinstance(error, rules.TooMany):
        return Problem(429, "rate_limited", str(error), headers={"Retry-After": str(error.retry_after)})
    if isinstance(error, KeyReused):
        return Problem(422, "idempotency_key_reused", str(error))
    if isinstance(error, InvalidCursor):
        return Problem(400, "invalid_cursor", str(error))
    if isinstance(error, InvalidInput):
        text = str(error)
        return Problem(400, "invalid_parameter", text[:1].upper() + text[1:] + ".")
    if isinstance(error, FederationError):  # the organization's provider (identity/federation/)
        if error.status == 429:
            return Problem(429, "rate_limited", error.description, headers={"Retry-After": str(DISCOVERY_RETRY_AFTER)})
        return Problem(502, "provider_unavailable", error.description)
    if isinstance(error, HTTPException) and error.status_code == 415:
        return Problem(415, "unsupported_media_type", "This operation takes a JSON body (application/json).")
    return None


MANAGEMENT: Slot[ManagementWeb] = Slot("management")  # the management API's web side, for the handlers
CALLER: Slot[AccessToken] = Slot("management_caller")  # the request's verified token (management_app)

__all__ = ["MANAGEMENT", "ManagementWeb", "apps", "org_keys", "problem_of"]
