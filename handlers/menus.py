"""Handlers of ``openapi/menus.yaml``. The catalog applies the rules.

Each handler takes no arguments: it reads the validated, typed parameters (with the contract's defaults)
that the parameter validation left in the request's state (``ARGUMENTS``), so the query is parsed once.
"""

from typing import Any

import orjson
from connexion.context import scope
from starlette.responses import Response

from data.catalog import Catalog, DishQuery
from service.menus_api.gate import API_URL, CATALOG
from service.web.link_header import next_link
from service.web.request_state import ARGUMENTS


def _catalog() -> Catalog:
    return CATALOG.get(scope)


def _arguments() -> dict[str, Any]:
    return ARGUMENTS.get(scope)


def _dish_query(arguments: dict[str, Any]) -> DishQuery:
    return DishQuery(
        region=arguments.get("region"),
        country=arguments.get("country"),
        course=arguments.get("course"),
        diet=arguments.get("diet"),
        max_spice=arguments.get("max_spice"),
        q=arguments.get("q"),
    )


def _ok(document: dict[str, Any]) -> Response:
    return Response(orjson.dumps(document), media_type="application/json")


async def list_regions() -> Response:
    regions = _catalog().regions(_arguments().get("country"))
    return _ok({"data": regions, "total": len(regions)})


async def get_region() -> Response:
    return _ok({"data": _catalog().region(_arguments()["slug"])})


# The list's parameters, in the contract's order, that the next page's URL repeats beside its cursor.
_PAGE_PARAMETERS = ("region", "country", "course", "diet", "max_spice", "q", "limit")


async def list_dishes() -> Response:
    arguments = _arguments()
    page = _catalog().dishes(_dish_query(arguments), limit=arguments["limit"], cursor=arguments.get("cursor"))
    headers = None
    if page.next_cursor is not None:
        parameters = [(name, arguments.get(name)) for name in _PAGE_PARAMETERS]
        headers = {"Link": next_link(API_URL.get(scope) + "/menus/dishes", parameters, page.next_cursor)}
    return Response(page.json(), media_type="application/json", headers=headers)


async def get_dish() -> Response:
    return _ok({"data": _catalog().dish(_arguments()["slug"])})


async def random_dishes() -> Response:
    arguments = _arguments()
    dishes = _catalog().random(_dish_query(arguments), count=arguments["count"])
    return _ok({"data": dishes, "total": len(dishes)})
