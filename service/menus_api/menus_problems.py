"""The menus API's own problems (RFC 9457, in the form of ``service/web/problems.py``): its Bearer challenge
(realm "menus"), the catalog's errors, and its answer when the worker refuses a request for load.
"""

from __future__ import annotations

from starlette.types import Scope, Send

from data.catalog_errors import NotFound
from service.web.problems import Problem, overloaded, send_problem


def unauthorized(scheme: str | None) -> Problem:
    """401 for the menus API; ``scheme`` is the one the request used (lower case), None when it sent none.

    RFC 6750 §3.1: ``error="invalid_token"`` only when a bearer token was sent and refused; a request
    without credentials, or with another scheme (Basic…), gets the bare challenge.
    """
    if scheme == "bearer":
        challenge = 'Bearer realm="menus", error="invalid_token"'
        detail = "The API key is malformed, unknown or revoked."
    elif scheme is None:
        challenge = 'Bearer realm="menus"'
        detail = "This API needs an API key: send 'Authorization: Bearer <API_KEY>'."
    else:  # the scheme the client sent is not repeated (docs/security.md: no client-supplied value is)
        challenge = 'Bearer realm="menus"'
        detail = "This API takes an API key in the Bearer scheme only: send 'Authorization: Bearer <API_KEY>'."
    return Problem(401, "unauthorized", detail, headers={"WWW-Authenticate": challenge})


def catalog_problem(error: Exception) -> Problem | None:
    """The catalog's errors (``data/catalog_errors.py``: their message is safe to show), as problems."""
    if isinstance(error, NotFound):
        return Problem(404, "not_found", str(error))
    return None


async def send_overloaded(_scope: Scope, send: Send, retry_after: int) -> None:
    """The menus API's answer when the worker refuses a request for load (an ``Api.overloaded``)."""
    await send_problem(send, overloaded(retry_after))
