"""The request lists: the typical query, a mix of unique dish queries with real cursors, and region pages."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

from data.catalog import COURSES, DIETS, Catalog, DishQuery

TYPICAL = "/v1/menus/dishes?course=main&max_spice=3&limit=20"


def region_paths(catalog: Catalog) -> list[str]:
    return [f"/v1/menus/regions/{region['slug']}" for region in catalog.regions()]


def search_words(catalog: Catalog) -> list[str]:
    """Words people search for: the dishes' ingredients and tags, plus a few that match nothing."""
    words = set()
    for region in catalog.regions():
        for dish in catalog.region(region["slug"])["dishes"]:
            words.update(word for item in dish["ingredients"] + dish["tags"] for word in item.split())
    return sorted(words) + ["creme brulee", "sao", "zzz"]


def unique_mix(catalog: Catalog, count: int, seed: int) -> list[str]:
    """``count`` distinct valid dish-list URLs: filters, searches, limits, and second and later cursor pages."""
    rng = random.Random(seed)
    regions = [region["slug"] for region in catalog.regions()]
    countries = sorted({region["country_code"] for region in catalog.regions()})
    words = search_words(catalog)
    seen: set[str] = set()
    urls: list[str] = []
    for url in _candidates(catalog, rng, regions, countries, words):
        if url not in seen:
            seen.add(url)
            urls.append(url)
            if len(urls) == count:
                return urls
    return urls


def _candidates(
    catalog: Catalog, rng: random.Random, regions: list[str], countries: list[str], words: list[str]
) -> Iterator[str]:
    while True:
        params: dict[str, str | int] = {}
        if rng.random() < 0.25:
            params["region"] = rng.choice(regions)
        elif rng.random() < 0.3:
            params["country"] = rng.choice(countries).lower() if rng.random() < 0.3 else rng.choice(countries)
        if rng.random() < 0.5:
            params["course"] = rng.choice(COURSES)
        if rng.random() < 0.4:
            params["diet"] = rng.choice(DIETS)
        if rng.random() < 0.5:
            params["max_spice"] = rng.randint(0, 5)
        if rng.random() < 0.4:
            params["q"] = " ".join(rng.sample(words, rng.choice((1, 1, 1, 2))))
        params["limit"] = rng.randint(1, 100) if rng.random() < 0.8 else rng.randint(1, 10)
        keys = list(params)
        rng.shuffle(keys)  # parameter order varies as it does between clients
        ordered = {key: params[key] for key in keys}
        yield "/v1/menus/dishes?" + urlencode(ordered)
        if rng.random() < 0.3:
            yield from _later_pages(catalog, ordered, rng.randint(1, 3))


def _later_pages(catalog: Catalog, params: dict[str, str | int], pages: int) -> Iterator[str]:
    query = DishQuery(
        region=_text(params, "region"),
        country=_text(params, "country"),
        course=_text(params, "course"),
        diet=_text(params, "diet"),
        max_spice=int(params["max_spice"]) if "max_spice" in params else None,
        q=_text(params, "q"),
    )
    cursor = None
    for _ in range(pages):
        page = catalog.dishes(query, limit=int(params["limit"]), cursor=cursor)
        if page.next_cursor is None:
            return
        cursor = page.next_cursor
        yield "/v1/menus/dishes?" + urlencode({**params, "cursor": cursor})


def _text(params: dict[str, str | int], name: str) -> str | None:
    value = params.get(name)
    return None if value is None else str(value)


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
