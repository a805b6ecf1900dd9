"""The operations endpoints (``/healthz``, ``/readyz``, ``/metrics``, and the site's icon ``/favicon.ico``):
Connexion's AsyncApp over ``operations.yaml``.

They sit outside both APIs' authentication. Their document is served at
``/ops/openapi.json`` (Swagger UI at ``/ops/ui/``) so that it never collides
with the identity API's, which may be at the root.
"""

from __future__ import annotations

from connexion.exceptions import ProblemException
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from service.ops.health import READINESS, Readiness
from service.web.connexion_adapter import connexion_app
from service.web.contracts import contract
from service.web.problems import connexion_handler

# what the dispatcher sends here, with everything under /ops/ (the icon: browsers ask for it at the origin's root)
PATHS = frozenset({"/healthz", "/readyz", "/metrics", "/favicon.ico"})
DOCUMENT_PREFIX = "/ops/"


def create_operations_app(readiness: Readiness) -> ASGIApp:
    operations = contract("operations.yaml")
    handler = connexion_handler(operations.allowed_methods(""))
    app = connexion_app(
        operations,
        base_path="",
        strict_validation=True,
        contract_parameters=True,  # the menus API's voice for parameter errors
        errors=[(error, handler) for error in (ProblemException, HTTPException, Exception)],
    )
    return _WithReadiness(app, readiness)


class _WithReadiness:
    """Puts the node's readiness check in the request's state, where ``/readyz`` finds it."""

    def __init__(self, app: ASGIApp, readiness: Readiness) -> None:
        self.app = app
        self.readiness = readiness

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            READINESS.put(scope, self.readiness)
        await self.app(scope, receive, send)


def is_operations_path(path: str) -> bool:
    return path in PATHS or path.startswith(DOCUMENT_PREFIX)
