"""The menus API: Connexion over ``openapi/menus.yaml`` (``service.web.connexion_adapter``), behind the gate
(a step of the edge, ``service/web/edge.py``)."""

from __future__ import annotations

from connexion.exceptions import ProblemException
from connexion.resolver import RelativeResolver
from starlette.exceptions import HTTPException

from data.catalog import Catalog
from data.catalog_errors import CatalogError
from identity.api_keys.usage import UsageCounter
from service.menus_api.answer_cache import AnswerCache
from service.menus_api.gate import ADDED_HEADERS, MenusGate
from service.menus_api.key_cache import KeyCache
from service.menus_api.key_failures import KeyFailures
from service.menus_api.menus_problems import catalog_problem
from service.menus_api.rate_limiter import RateLimiter
from service.web.connexion_adapter import connexion_app
from service.web.contracts import Contract, contract
from service.web.edge import Api
from service.web.problems import connexion_handler

BASE_PATH = "/v1"


def create_menus_app(
    *,
    catalog: Catalog,
    keys: KeyCache,
    limiter: RateLimiter,
    answers: AnswerCache,
    api_url: str,
    validate_responses: bool = False,
    usage: UsageCounter | None = None,
    failures: KeyFailures | None = None,
) -> Api:
    menus = contract("menus.yaml")
    handler = connexion_handler(menus.allowed_methods(BASE_PATH), catalog_problem)
    app = connexion_app(
        menus,
        base_path=BASE_PATH,
        strict_validation=True,
        validate_responses=validate_responses,
        contract_parameters=True,
        without_response_headers=ADDED_HEADERS,  # the gate adds them after Connexion's response validation
        resolver=RelativeResolver("handlers"),
        errors=[(error, handler) for error in (ProblemException, HTTPException, CatalogError, Exception)],
    )
    gate = MenusGate(
        keys=keys,
        limiter=limiter,
        catalog=catalog,
        answers=answers,
        api_url=api_url,
        if_none_match_max=_if_none_match_max(menus),
        count=usage.count if usage is not None else None,
        failures=failures,
    )
    return Api(app, (gate,))


def _if_none_match_max(menus: Contract) -> int:
    """The contract's longest If-None-Match: a longer one bypasses the answer cache so validation refuses it."""
    return int(menus.parameter("ifNoneMatch")["schema"]["maxLength"])
