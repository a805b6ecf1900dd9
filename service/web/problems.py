"""RFC 9457 problem details, turned into HTTP in this one place: the error form of the menus and operations
APIs, of the documentation pages, and of the identity API's operations that answer problems.

Every error those answer, whether raised by a handler, by Connexion's routing and validation, or by a gate in
front, becomes a ``Problem`` here and leaves as ``application/problem+json`` with a stable ``code``. What only
one API says is that API's own (the menus API's challenge and catalog errors: ``service/menus_api/menus_problems.py``),
handed in as ``domain``: a function that turns the errors of its domain into problems.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TypeGuard

import orjson
from connexion.exceptions import ProblemException
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from sqlalchemy.exc import DBAPIError, IntegrityError
from starlette.exceptions import HTTPException
from starlette.types import Send

from cursors import InvalidCursor

log = logging.getLogger("service.problems")

MEDIA_TYPE = "application/problem+json"
UNAVAILABLE_RETRY_AFTER = 5  # seconds a client should wait when the database is unreachable
TITLES = {
    "unauthorized": "Unauthorized",
    "invalid_parameter": "Invalid parameter",
    "invalid_cursor": "Invalid cursor",
    "not_found": "Not found",
    "method_not_allowed": "Method not allowed",
    "rate_limited": "Too many requests",
    "content_too_large": "Content too large",
    "internal_error": "Internal error",
    "service_unavailable": "Service unavailable",
    "forbidden": "Forbidden",
    "conflict": "Conflict",
    "precondition_failed": "Precondition failed",
    "precondition_required": "Precondition required",
    "idempotency_key_reused": "Idempotency key reused",
    "unsupported_media_type": "Unsupported media type",
    "provider_unavailable": "Provider unavailable",  # an organization's own OpenID provider (management API)
}
CODE_BY_STATUS = {
    400: "invalid_parameter",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    429: "rate_limited",
}


class Problem(ProblemException):
    """A problem with its public text; ``headers`` go out with the response."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        invalid_params: Sequence[tuple[str, str]] = (),
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(status=status, title=TITLES[code], detail=detail, headers=headers)
        self.code = code
        self.invalid_params = list(invalid_params)

    @property
    def type_uri(self) -> str:
        return f"tag:regional-menus,2026:problem:{self.code}"

    def body(self) -> bytes:
        document: dict[str, object] = {
            "type": self.type_uri,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
        }
        if self.invalid_params:
            document["invalid_params"] = [{"name": n, "reason": r} for n, r in self.invalid_params]
        return orjson.dumps(document)

    def asgi_headers(self) -> list[tuple[bytes, bytes]]:
        body_headers = [(b"content-type", MEDIA_TYPE.encode())]
        return body_headers + [(k.lower().encode(), v.encode()) for k, v in (self.headers or {}).items()]


def invalid_parameters(errors: Iterable[tuple[str, str]]) -> Problem:
    errors = list(errors)
    if len(errors) == 1:
        detail = f"{errors[0][0]} {errors[0][1]}"
    else:
        detail = f"{len(errors)} parameters are invalid: " + "; ".join(f"{n} {r}" for n, r in errors)
    return Problem(400, "invalid_parameter", detail, invalid_params=errors)


def nothing_here() -> Problem:
    return Problem(404, "not_found", "There is nothing at this path.")


def content_too_large(detail: str) -> Problem:
    """RFC 9110 §15.5.14: the body is over the cap (``service.web.body_limit``); no menus operation takes one."""
    return Problem(413, "content_too_large", detail)


def database_unavailable(error: Exception) -> TypeGuard[DBAPIError]:
    """Whether ``error`` says the database cannot be reached or used just now (503 with ``Retry-After``: the client
    retries, the operator sees an outage). An ``IntegrityError`` never does: a constraint refused a write, which is
    a race a store failed to take (each store that reads a unique row and writes it locks or upserts: CONTRIBUTING.md,
    "Stores under concurrency") or a bug, answered and logged as the unexpected error it is (500, with its trace)."""
    return isinstance(error, DBAPIError) and not isinstance(error, IntegrityError)


def unavailable() -> Problem:
    """The state database cannot be reached; the service recovers by itself when it returns."""
    return Problem(
        503,
        "service_unavailable",
        "The service cannot reach its database; retry shortly.",
        headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER)},
    )


async def send_problem(send: Send, problem: Problem, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """Send ``problem`` as a complete response (with ``extra`` headers) through an ASGI ``send``."""
    body = problem.body()
    headers = problem.asgi_headers() + [(b"content-length", str(len(body)).encode())] + (extra or [])
    await send({"type": "http.response.start", "status": problem.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def overloaded(retry_after: int) -> Problem:
    """This worker is at its bound of accepted work (``service/web/admission.py``): retry shortly, maybe elsewhere."""
    seconds = "second" if retry_after == 1 else "seconds"
    return Problem(
        503,
        "service_unavailable",
        f"The service is at its capacity; retry after {retry_after} {seconds}.",
        headers={"Retry-After": str(retry_after)},
    )


DomainErrors = Callable[[Exception], Problem | None]  # an API's own errors as problems; None: not one of them


def no_domain_errors(_error: Exception) -> Problem | None:
    """The ``domain`` of an API whose domain raises no error of its own that reaches here."""
    return None


def to_problem(
    error: Exception, allowed_methods: Sequence[str] = (), domain: DomainErrors = no_domain_errors
) -> Problem:
    """Turn any error raised while answering a request into its problem; ``domain`` names the API's own."""
    if isinstance(error, Problem):
        return error
    if database_unavailable(error):
        log.error("database unavailable: %s", type(error.orig).__name__ if error.orig else type(error).__name__)
        return unavailable()
    if (problem := domain(error)) is not None:
        return problem
    if isinstance(error, InvalidCursor):
        return Problem(400, "invalid_cursor", str(error))
    if isinstance(error, HTTPException) and error.status_code in CODE_BY_STATUS:
        # Connexion's own problems (validation, media type) and Starlette's routing errors.
        status = error.status_code
        if status == 404:
            return nothing_here()
        if status == 405:
            allow = ", ".join(allowed_methods) or "GET, HEAD"
            return Problem(405, "method_not_allowed", f"This path supports {allow} only.", headers={"Allow": allow})
        detail = str(getattr(error, "detail", "") or TITLES[CODE_BY_STATUS[status]])
        return Problem(status, CODE_BY_STATUS[status], detail.split("\n\n", 1)[0])
    log.error("unexpected error while answering a request", exc_info=error)
    return Problem(500, "internal_error", "The server could not answer this request.")


def connexion_handler(
    allowed_methods_for: Callable[[str], Sequence[str]], domain: DomainErrors = no_domain_errors
) -> Callable[[ConnexionRequest, Exception], ConnexionResponse]:
    """An error handler for Connexion's ``add_error_handler`` that answers with the problem."""

    def handle(request: ConnexionRequest, error: Exception) -> ConnexionResponse:
        problem = to_problem(error, allowed_methods_for(request.scope.get("path", "")), domain)
        return ConnexionResponse(
            status_code=problem.status,
            mimetype=MEDIA_TYPE,
            body=problem.body(),
            headers=problem.headers or {},
        )

    return handle
