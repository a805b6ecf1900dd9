"""The menus API: Connexion's AsyncApp over ``openapi/menus.yaml``, behind the gate."""

from __future__ import annotations

from connexion.exceptions import ProblemException
from connexion.middleware import ConnexionMiddleware
from connexion.middleware.response_validation import ResponseValidationMiddleware
from connexion.middleware.security import SecurityMiddleware
from connexion.resolver import RelativeResolver
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp

from data.catalog import Catalog
from data.errors import CatalogError
from identity.api_keys import ApiKeyStore
from identity.usage import UsageCounter
from service.menus_api.answer_cache import AnswerCache
from service.menus_api.gate import MenusGate
from service.menus_api.ratelimit import RateLimiter
from service.web.async_app import AsyncApp
from service.web.contracts import document, specification
from service.web.documents import declared_methods
from service.web.problems import connexion_handler
from service.web.validation import ContractParameterValidator, ContractResponseValidation

BASE_PATH = "/v1"
# Authentication is the gate's job (before routing); Connexion keeps routing and validation.
# Response validation must not expect the headers the gate adds after it.
MIDDLEWARES = [
    ContractResponseValidation if m is ResponseValidationMiddleware else m
    for m in ConnexionMiddleware.default_middlewares
    if m is not SecurityMiddleware
]


def create_menus_app(
    *,
    catalog: Catalog,
    keys: ApiKeyStore,
    limiter: RateLimiter,
    answers: AnswerCache,
    validate_responses: bool = False,
    usage: UsageCounter | None = None,
) -> ASGIApp:
    app = AsyncApp(__name__, middlewares=MIDDLEWARES)
    app.add_api(
        specification("menus.yaml"),
        base_path=BASE_PATH,
        strict_validation=True,
        validate_responses=validate_responses,
        validator_map={"parameter": ContractParameterValidator},
        resolver=RelativeResolver("handlers"),
    )
    handler = connexion_handler(declared_methods("menus.yaml", BASE_PATH))
    for error in (ProblemException, HTTPException, CatalogError, Exception):
        app.add_error_handler(error, handler)
    return MenusGate(
        app,
        keys=keys,
        limiter=limiter,
        catalog=catalog,
        answers=answers,
        if_none_match_max=_if_none_match_max(),
        counting=usage.counting if usage is not None else None,
    )


def _if_none_match_max() -> int:
    """The contract's longest If-None-Match: a longer one bypasses the answer cache so validation refuses it."""
    parameters = document("menus.yaml")["components"]["parameters"]
    return int(parameters["ifNoneMatch"]["schema"]["maxLength"])
