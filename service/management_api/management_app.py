"""The management API: Connexion over ``openapi/management.yaml`` (``service.web.connexion_adapter``), at
``/management/v1`` on the menus API's host.

Handlers (``handlers/management.py``) call ``ManagementWeb`` (``management_web.py``), which authenticates the
access token, asks the domain (``identity/organizations/``) and shapes the JSON. Every error, Connexion's own
included, leaves as a problem (``service/web/problems.py``), the domain's words mapped in ``problem_of``.
"""

from __future__ import annotations

from connexion.exceptions import ProblemException
from connexion.resolver import RelativeResolver
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from service.management_api.management_web import CALLER, MANAGEMENT, ManagementWeb, problem_of
from service.management_api.paths import MANAGEMENT_PATH
from service.web.connexion_adapter import connexion_app
from service.web.contracts import contract
from service.web.offload import in_thread
from service.web.problems import connexion_handler, send_problem, to_problem

BASE_PATH = MANAGEMENT_PATH


def create_management_app(web: ManagementWeb, *, validate_responses: bool = False) -> ASGIApp:
    management = contract("management.yaml")
    handler = connexion_handler(management.allowed_methods(BASE_PATH), problem_of)
    app = connexion_app(
        management,
        base_path=BASE_PATH,
        strict_validation=True,
        contract_parameters=True,  # every parameter error names the parameter, in the service's words
        validate_responses=validate_responses,
        resolver=RelativeResolver("handlers"),
        errors=[(error, handler) for error in (ProblemException, HTTPException, Exception)],
    )
    return _WithManagement(app, web)


class _WithManagement:
    """Puts the management API's web side in each request's state, where the handlers find it, and the request's
    verified token (401 at once without one: before routing and validation, as the menus API's key gate)."""

    def __init__(self, app: ASGIApp, web: ManagementWeb) -> None:
        self.app = app
        self.web = web

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            MANAGEMENT.put(scope, self.web)
            try:
                access = await in_thread(self.web.verified, Headers(scope=scope).get("authorization"))
            except Exception as error:  # noqa: BLE001 - every refusal, a database outage included, as a problem
                await send_problem(send, to_problem(error, (), problem_of))
                return
            CALLER.put(scope, access)
        await self.app(scope, receive, send)
