"""Handlers of ``openapi/menus.yaml``. Arguments arrive validated; the catalog applies the rules."""

from typing import Any

import orjson
from connexion.context import scope
from starlette.responses import Response

from data.catalog import Catalog, DishQuery


def _catalog() -> Catalog:
    return scope["state"]["catalog"]  # type: ignore[no-any-return]


def _ok(document: dict[str, Any]) -> Response:
    return Response(orjson.dumps(document), media_type="application/json")


async def list_regions(country: str | None = None) -> Response:
    regions = _catalog().regions(country)
    return _ok({"data": regions, "total": len(regions)})


async def get_region(slug: str) -> Response:
    return _ok({"data": _catalog().region(slug)})


async def list_dishes(
    region: str | None = None,
    country: str | None = None,
    course: str | None = None,
    diet: str | None = None,
    max_spice: int | None = None,
    q: str | None = None,
    limit: int = 20,
    cursor: str | None = None,
) -> Response:
    query = DishQuery(region=region, country=country, course=course, diet=diet, max_spice=max_spice, q=q)
    page = _catalog().dishes(query, limit=limit, cursor=cursor)
    return Response(page.json(), media_type="application/json")


async def get_dish(slug: str) -> Response:
    return _ok({"data": _catalog().dish(slug)})


async def random_dishes(
    region: str | None = None,
    country: str | None = None,
    course: str | None = None,
    diet: str | None = None,
    max_spice: int | None = None,
    q: str | None = None,
    count: int = 1,
) -> Response:
    query = DishQuery(region=region, country=country, course=course, diet=diet, max_spice=max_spice, q=q)
    dishes = _catalog().random(query, count=count)
    return _ok({"data": dishes, "total": len(dishes)})
