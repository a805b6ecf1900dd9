"""The developer console: Connexion over ``openapi/console.yaml`` (``service.web.connexion_adapter``), at its path.

Handlers (``handlers/console.py``) call ``ConsoleWeb`` (``service/console_api/console_web.py``), which reads
cookies and forms, asks the domain (``identity/api_keys/console_rules.py``) and renders pages. The relying-party
side of signing in is ``relying_party.py``; the cookies are ``cookies.py``, the pages ``rendering.py``.
"""

from __future__ import annotations

import re

from connexion.exceptions import ProblemException
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from connexion.resolver import RelativeResolver
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from service.console_api.console_web import CONSOLE, ConsoleWeb
from service.web.body_limit import BodyCap
from service.web.connexion_adapter import as_connexion, connexion_app
from service.web.contracts import contract
from service.web.request_reading import BODY, BodyRecorder

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def create_console_app(web: ConsoleWeb, *, validate_responses: bool = False) -> ASGIApp:
    console = contract("console.yaml")
    allowed = console.allowed_methods(web.path)

    async def as_page(request: ConnexionRequest, error: Exception) -> ConnexionResponse:
        """Connexion's own errors (validation, unknown path, method) and anything unexpected, as an HTML page."""
        status = error.status_code if isinstance(error, HTTPException) else getattr(error, "status", 500)
        if not isinstance(error, HTTPException | ProblemException):
            status = 500
        response = web.error_response(int(status), error)
        if status == 405:  # RFC 9110 §15.5.6
            response.headers["Allow"] = ", ".join(allowed(str(request.scope.get("path", ""))))
        return as_connexion(response)

    app = connexion_app(
        console,
        base_path=web.path,
        strict_validation=True,
        contract_parameters=True,  # every parameter error names the parameter, in the service's words
        validate_responses=validate_responses,
        resolver=RelativeResolver("handlers"),
        errors=[(error, as_page) for error in (ProblemException, HTTPException, Exception)],
    )
    return ConsoleEntry(app, web)


class ConsoleEntry:
    """Puts the console in each request's state, keeps a POST's body for the handlers, caps it at
    ``web.form_limit`` (413), sends the bare console path to its home page, and answers 404 for any other path
    that ends with a slash."""

    def __init__(self, app: ASGIApp, web: ConsoleWeb) -> None:
        self.app = app
        self.cap = BodyCap(web.form_limit, lambda _scope, _limit: web.too_large())
        self.web = web

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if _CONTROL.search(scope["path"]):  # never a path of ours (Connexion would answer 500)
            await self.web.error_response(404, LookupError(scope["path"]))(scope, receive, send)
            return
        if scope["path"] == self.web.path:  # the one redirect of the console: relative, never built from Host
            await self.web.redirect(self.web.home)(scope, receive, send)
            return
        if scope["path"].endswith("/") and scope["path"] != self.web.home:
            # No path is redirected to drop a trailing slash (Starlette would, to an absolute URL built from Host).
            await self.web.error_response(404, LookupError(scope["path"]))(scope, receive, send)
            return
        CONSOLE.put(scope, self.web)
        if scope["method"] == "POST":
            admitted = await self.cap(scope, receive, send)  # 413 past web.form_limit (service/web/body_limit.py)
            if admitted is None:
                return
            scope, receive = admitted
            recorder = BodyRecorder(receive)
            BODY.put(scope, recorder)
            receive = recorder
        await self.app(scope, receive, send)
