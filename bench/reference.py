"""The reference: a minimal hand-written Starlette app serving the same endpoints over the same dataset.

What it does on every request, and why that is the same work as the service:

- the API key: ``ApiKeyStore.authenticate``, one indexed SQL lookup of the key's
  SHA-256 on the same database, on every request (the service answers keys it has
  seen live from memory, ``service/menus_api/key_cache.py``, so part of its lead on
  repeated queries is that cache);
- the same per-key rate limit (``RateLimiter.take``, a sliding window counter in memory), with its three headers;
- strict validation by hand: unknown or repeated parameters, enums, integer
  ranges, lengths and patterns of ``/dishes`` as the contract states them;
- filter a list of plain dicts loaded from the YAML files, page it by the
  same signed keyset cursor (``cursors``), and serialise with orjson;
- a strong ETag (BLAKE2b of the body) and ``Cache-Control``.

It does not answer ``If-None-Match`` with 304s and keeps nothing between
requests: every answer is recomputed. Run as
``python -m bench.reference --port P --database-url URL``; uvicorn as the service runs it.

With ``--lean`` it is the issue's "lean hand-written Starlette route over the same data": the API key is
checked from memory (its SHA-256 looked up in a dict, filled by one SQL lookup the first time a key is seen;
no revocation is ever noticed), and there is no rate limit and no ``RateLimit-*`` header; the strict
parameters, filter, sort, page and compact JSON are the same.
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import orjson
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bench.servers import run_app
from cursors import CursorCodec, InvalidCursor
from data.catalog import DIET_INCLUDES, DISH_KEYS, dataset_directory
from data.folding import fold, terms
from identity.api_keys.keys import ApiKeyStore
from service.database.db import make_engine, service_secret
from service.database.sealing_keys import load_sealer
from service.menus_api.rate_limiter import RateLimiter, RedisTuning
from service.settings import Settings, secret_keys_from

COURSES = {"breakfast", "starter", "main", "side", "bread", "rice", "snack", "dessert", "beverage"}
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
COUNTRY = re.compile(r"[A-Za-z]{2}")
DIGITS = re.compile(r"-?[0-9]+")
DISH_PARAMS = {"region", "country", "course", "diet", "max_spice", "q", "limit", "cursor"}


def load(directory: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Every dish as a dict (its API document plus what filtering needs), sorted by folded name then slug."""
    dishes: list[dict[str, Any]] = []
    regions: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.glob("*.yaml")):
        record = yaml.safe_load(path.read_text(encoding="utf-8"))
        summary = {"slug": record["slug"], "name": record["name"], "country_code": record["country_code"]}
        own = []
        for raw in record["dishes"]:
            document = {key: raw[key] for key in DISH_KEYS}
            text = [raw["name"], raw["local_name"] or "", record["name"], *raw["ingredients"], *raw["tags"]]
            dish = {
                "doc": {**document, "region": summary},
                "in_region": document,
                "region": record["slug"],
                "country": record["country_code"],
                "search": "\x1f".join(fold(t) for t in text),
                "key": (fold(raw["name"]), raw["slug"]),
            }
            own.append(dish)
        dishes.extend(own)
        own.sort(key=lambda d: d["key"])
        regions[record["slug"]] = {
            **{k: record[k] for k in ("slug", "name", "kind", "country_code", "country", "summary")},
            "staples": list(record["staples"]),
            "dish_count": len(own),
            "dishes": [d["in_region"] for d in own],
        }
    dishes.sort(key=lambda d: d["key"])
    return dishes, regions


def problem(status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> Response:
    body = {"type": f"tag:regional-menus,2026:problem:{code}", "title": code, "status": status, "detail": detail}
    return Response(orjson.dumps({**body, "code": code}), status, headers, "application/problem+json")


def create_reference(database_url: str, rate_limit: int, *, lean: bool = False) -> Starlette:
    settings = Settings(database_url=database_url)
    engine = make_engine(database_url, settings.database_pool())
    keys = ApiKeyStore(engine)
    limiter = None if lean else RateLimiter(rate_limit, redis=RedisTuning.of(settings))
    known: dict[bytes, str] = {}  # --lean: SHA-256 of a key seen live → its id; never forgets (no revocation)

    def key_from_memory(token: str) -> str | None:
        digest = hashlib.sha256(token.encode()).digest()
        key_id = known.get(digest)
        if key_id is None:
            key_id = keys.authenticate(token)  # once per key
            if key_id is not None:
                known[digest] = key_id
        return key_id

    sealer = load_sealer(secret_keys_from(os.environ), database_url)
    cursors = CursorCodec(service_secret(engine, sealer, "menus-cursor-key"))
    dishes, regions = load(dataset_directory())

    async def authenticate(request: Request) -> tuple[Response | None, list[tuple[str, str]]]:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        lookup = key_from_memory if lean else keys.authenticate
        key_id = lookup(token.strip()) if scheme.lower() == "bearer" else None
        if key_id is None:
            return problem(401, "unauthorized", "bad key", {"WWW-Authenticate": 'Bearer realm="menus"'}), []
        if limiter is None:
            return None, []
        decision = await limiter.take(key_id)
        headers = [(k.decode(), v.decode()) for k, v in decision.headers()]
        if not decision.allowed:
            return problem(429, "rate_limited", "slow down", {"Retry-After": str(decision.retry_after)}), headers
        return None, headers

    def ok(document: Any, rate_headers: list[tuple[str, str]]) -> Response:
        body = orjson.dumps(document)
        etag = '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'
        headers = dict(rate_headers) | {"etag": etag, "cache-control": "private, max-age=300"}
        return Response(body, 200, headers, "application/json")

    async def list_dishes(request: Request) -> Response:
        refused, rate_headers = await authenticate(request)
        if refused is not None:
            return refused
        params: dict[str, str] = {}
        for name, value in parse_qsl(request.scope["query_string"].decode("latin-1"), keep_blank_values=True):
            if name not in DISH_PARAMS or name in params:
                return problem(400, "invalid_parameter", f"{name}: unknown or repeated")
            params[name] = value
        region, country, course, diet = (params.get(n) for n in ("region", "country", "course", "diet"))
        q, cursor = params.get("q"), params.get("cursor")
        if region is not None and not SLUG.fullmatch(region):
            return problem(400, "invalid_parameter", "region")
        if country is not None and not COUNTRY.fullmatch(country):
            return problem(400, "invalid_parameter", "country")
        if course is not None and course not in COURSES:
            return problem(400, "invalid_parameter", "course")
        if diet is not None and diet not in DIET_INCLUDES:
            return problem(400, "invalid_parameter", "diet")
        if q is not None and not (1 <= len(q) <= 100 and q.strip()):
            return problem(400, "invalid_parameter", "q")
        numbers = {}
        for name, low, high, default in (("max_spice", 0, 5, None), ("limit", 1, 100, 20)):
            raw = params.get(name)
            if raw is None:
                numbers[name] = default
            elif not DIGITS.fullmatch(raw) or not low <= int(raw) <= high:
                return problem(400, "invalid_parameter", name)
            else:
                numbers[name] = int(raw)
        max_spice, limit = numbers["max_spice"], numbers["limit"]
        assert limit is not None
        country = country.upper() if country else None
        words = terms(q) if q else ()
        diets = DIET_INCLUDES[diet] if diet else None
        matches = [
            d
            for d in dishes
            if (region is None or d["region"] == region)
            and (country is None or d["country"] == country)
            and (course is None or d["doc"]["course"] == course)
            and (diets is None or d["doc"]["diet"] in diets)
            and (max_spice is None or d["doc"]["spice_level"] <= max_spice)
            and all(w in d["search"] for w in words)
        ]
        filters = "\x1f".join("" if v is None else str(v) for v in (region, country, course, diet, max_spice))
        filters += "\x1f" + " ".join(words)
        start = 0
        if cursor is not None:
            try:
                after = cursors.decode(cursor, filters)
            except InvalidCursor as error:
                return problem(400, "invalid_cursor", str(error))
            start = bisect.bisect_right(matches, after, key=lambda d: d["key"])
        page = matches[start : start + limit]
        more = start + limit < len(matches)
        next_cursor = cursors.encode(page[-1]["key"], filters) if more and page else None
        return ok({"data": [d["doc"] for d in page], "total": len(matches), "next_cursor": next_cursor}, rate_headers)

    async def get_region(request: Request) -> Response:
        refused, rate_headers = await authenticate(request)
        if refused is not None:
            return refused
        if request.scope["query_string"]:
            return problem(400, "invalid_parameter", "no parameters here")
        slug = request.path_params["slug"]
        if not SLUG.fullmatch(slug):
            return problem(400, "invalid_parameter", "slug")
        region = regions.get(slug)
        if region is None:
            return problem(404, "not_found", "no such region")
        return ok({"data": region}, rate_headers)

    return Starlette(
        routes=[Route("/v1/menus/dishes", list_dishes), Route("/v1/menus/regions/{slug}", get_region)],
    )


def from_env() -> Starlette:
    """The factory uvicorn's workers call (``--workers`` needs an import string)."""
    lean = os.environ.get("BENCH_LEAN") == "1"
    return create_reference(os.environ["BENCH_DATABASE_URL"], int(os.environ["BENCH_RATE_LIMIT"]), lean=lean)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--rate-limit", type=int, default=10**9)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--lean", action="store_true", help="key from memory, no rate limit (the lean route)")
    args = parser.parse_args()
    os.environ["BENCH_DATABASE_URL"], os.environ["BENCH_RATE_LIMIT"] = args.database_url, str(args.rate_limit)
    os.environ["BENCH_LEAN"] = "1" if args.lean else "0"
    run_app("bench.reference:from_env", from_env, workers=args.workers, port=args.port, log_level="info")


if __name__ == "__main__":
    main()
