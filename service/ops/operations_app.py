"""The operations endpoints (``/healthz``, ``/readyz``, ``/metrics``): Connexion's AsyncApp over ``operations.yaml``.

They sit outside both APIs' authentication. Their document is served at
``/ops/openapi.json`` (Swagger UI at ``/ops/ui/``) so that it never collides
with the identity API's, which may be at the root.
"""

from __future__ import annotations

import connexion
from connexion.exceptions import ProblemException
from connexion.options import SwaggerUIOptions
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from service.ops.health import Readiness
from service.web.contracts import specification
from service.web.documents import declared_methods
from service.web.problems import connexion_handler
from service.web.validation import ContractParameterValidator

PATHS = frozenset({"/healthz", "/readyz", "/metrics"})  # what the dispatcher sends here, with everything under /ops/
DOCUMENT_PREFIX = "/ops/"


def create_operations_app(readiness: Readiness) -> ASGIApp:
    app = connexion.AsyncApp(__name__)
    app.add_api(
        specification("operations.yaml"),
        base_path="",
        strict_validation=True,
        validator_map={"parameter": ContractParameterValidator},  # the menus API's voice for parameter errors
        swagger_ui_options=SwaggerUIOptions(spec_path="/ops/openapi.json", swagger_ui_path="/ops/ui"),
    )
    handler = connexion_handler(declared_methods("operations.yaml", ""))
    for error in (ProblemException, HTTPException, Exception):
        app.add_error_handler(error, handler)
    return _WithState(app, readiness=readiness)


class _WithState:
    """Puts the node's shared objects in the request scope, where the handlers find them."""

    def __init__(self, app: ASGIApp, **state: object) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope.setdefault("state", {}).update(self.state)
        await self.app(scope, receive, send)


def is_operations_path(path: str) -> bool:
    return path in PATHS or path.startswith(DOCUMENT_PREFIX)
