"""The read-only catalog: loads the curated dataset, validates it, and answers queries.

Every invariant of the specification (§1, §2, §8) and of the dataset's design is
checked when the catalog loads; a dataset that breaks one is refused with a
message naming the file and the record.
"""

from __future__ import annotations

import copy
import random
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
import pycountry
import yaml

from cursors import CursorCodec, Position
from data.catalog_errors import NotFound
from data.folding import fold, terms
from data.yaml_text import safe_load

COURSES = ("breakfast", "starter", "main", "side", "bread", "rice", "snack", "dessert", "beverage")
DIETS = ("vegan", "vegetarian", "eggetarian", "pescatarian", "non_vegetarian")
KINDS = ("country", "state", "region", "city")

# docs/menus-api.md (Filters): a dish suits a diet when its own diet is in that diet's set.
DIET_INCLUDES: Mapping[str, frozenset[str]] = {diet: frozenset(DIETS[: i + 1]) for i, diet in enumerate(DIETS)}

REGION_COUNT = 16  # the README's 146 dishes from 16 regions
DISHES_PER_REGION = (9, 10)  # two regions have 10, the others 9
REGIONS_WITH_TEN = 2
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
SLUG_MAX = 60
TAG = SLUG
REGION_KEYS = ("slug", "name", "kind", "country_code", "country", "summary", "staples", "dishes")
DISH_KEYS = (
    "slug", "name", "local_name", "description", "course", "diet",
    "spice_level", "price_level", "ingredients", "tags",
)  # fmt: skip


class DatasetError(ValueError):
    """The dataset breaks an invariant; the message names the file and record."""


@dataclass(frozen=True, slots=True)
class Dish:
    slug: str
    name: str
    region_slug: str
    course: str
    diet: str
    spice_level: int
    country_code: str
    sort_key: Position
    haystack: str  # folded searchable fields joined by a separator no term can contain
    document: dict[str, Any]  # the API representation, with the region summary
    region_document: dict[str, Any]  # the API representation inside its region (no region field)
    fragment: bytes = b""  # ``document`` serialised once (compact JSON), for answers assembled from fragments


@dataclass(frozen=True, slots=True)
class Region:
    slug: str
    name: str
    country_code: str
    sort_key: Position
    document: dict[str, Any]  # the API representation, with dish_count
    detail: dict[str, Any]  # the region with its dishes


@dataclass(frozen=True, slots=True)
class DishQuery:
    """The filters of the dish list and random picks (openapi/menus.yaml); ``None`` means not filtered."""

    region: str | None = None
    country: str | None = None
    course: str | None = None
    diet: str | None = None
    max_spice: int | None = None
    q: str | None = None
    _terms: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_terms", terms(self.q) if self.q else ())
        if self.country is not None:
            object.__setattr__(self, "country", self.country.upper())

    @property
    def terms(self) -> tuple[str, ...]:
        return self._terms

    def fingerprint(self) -> str:
        """A canonical text of the filters, equal for queries that select the same dishes."""
        fields = (self.region, self.country, self.course, self.diet, self.max_spice, " ".join(self._terms))
        return "\x1f".join("" if value is None else str(value) for value in fields)

    def matches(self, dish: Dish) -> bool:
        return (
            (self.region is None or dish.region_slug == self.region)
            and (self.country is None or dish.country_code == self.country)
            and (self.course is None or dish.course == self.course)
            and (self.diet is None or dish.diet in DIET_INCLUDES[self.diet])
            and (self.max_spice is None or dish.spice_level <= self.max_spice)
            and all(term in dish.haystack for term in self._terms)
        )


@dataclass(frozen=True, slots=True)
class Page:
    items: list[dict[str, Any]]
    total: int
    next_cursor: str | None
    fragments: tuple[bytes, ...] = ()  # each item's compact JSON, in order

    def json(self) -> bytes:
        """``{"data": items, "total": …, "next_cursor": …}`` as compact JSON, built from the precomputed fragments.

        Byte for byte what ``orjson.dumps`` gives for the same document, without serialising the dishes again.
        """
        return b"".join(
            (
                b'{"data":[',
                b",".join(self.fragments),
                b'],"total":',
                str(self.total).encode(),
                b',"next_cursor":',
                orjson.dumps(self.next_cursor),
                b"}",
            )
        )


class _FilterIndex:
    """One bit per dish in name order: each filter value's set of dishes, so a query is a few ``&``s.

    Search terms are free text, so their sets are computed on first use and kept in a bounded table.
    """

    MAX_TERMS = 10_000

    def __init__(self, dishes: Sequence[Dish]) -> None:
        self._dishes = dishes
        self.everything = (1 << len(dishes)) - 1

        def mask(rule: Any) -> int:
            return sum(1 << i for i, dish in enumerate(dishes) if rule(dish))

        self.region = {slug: mask(lambda d, s=slug: d.region_slug == s) for slug in {d.region_slug for d in dishes}}
        self.country = {c: mask(lambda d, c=c: d.country_code == c) for c in {d.country_code for d in dishes}}
        self.course = {c: mask(lambda d, c=c: d.course == c) for c in COURSES}
        self.diet = {diet: mask(lambda d, ok=DIET_INCLUDES[diet]: d.diet in ok) for diet in DIETS}
        self.max_spice = {n: mask(lambda d, n=n: d.spice_level <= n) for n in range(6)}
        self._terms: dict[str, int] = {}

    def term(self, term: str) -> int:
        found = self._terms.get(term)
        if found is None:
            found = sum(1 << i for i, dish in enumerate(self._dishes) if term in dish.haystack)
            if len(self._terms) >= self.MAX_TERMS:
                self._terms.clear()  # rare; a fresh table is as correct as a full one
            self._terms[term] = found
        return found

    def select(self, query: DishQuery) -> list[Dish]:
        """The matching dishes, in name order: the same as ``[d for d in dishes if query.matches(d)]``."""
        selected = self.everything
        if query.region is not None:
            selected &= self.region.get(query.region, 0)
        if query.country is not None:
            selected &= self.country.get(query.country, 0)
        if query.course is not None:
            selected &= self.course.get(query.course, 0)
        if query.diet is not None:
            selected &= self.diet.get(query.diet, 0)
        if query.max_spice is not None:
            selected &= self.max_spice.get(min(query.max_spice, 5), 0) if query.max_spice >= 0 else 0
        for term in query.terms:
            if not selected:
                break
            selected &= self.term(term)
        dishes = self._dishes
        found = []
        while selected:
            lowest = selected & -selected
            found.append(dishes[lowest.bit_length() - 1])
            selected ^= lowest
        return found


class Catalog:
    """Queries over the validated dataset. Immutable once built; safe to share between threads."""

    def __init__(self, regions: Sequence[Region], dishes: Sequence[Dish], cursor_key: bytes) -> None:
        self._regions = sorted(regions, key=lambda region: region.sort_key)
        self._regions_by_slug = {region.slug: region for region in regions}
        self._dishes = sorted(dishes, key=lambda dish: dish.sort_key)
        self._dishes_by_slug = {dish.slug: dish for dish in dishes}
        self._cursors = CursorCodec(cursor_key)
        self._index = _FilterIndex(self._dishes)

    def with_cursor_key(self, cursor_key: bytes) -> Catalog:
        """The same catalog signing its cursors with ``cursor_key``: a loaded catalog reused by another database."""
        other = copy.copy(self)
        other._cursors = CursorCodec(cursor_key)
        return other

    @property
    def dish_count(self) -> int:
        return len(self._dishes)

    @property
    def region_count(self) -> int:
        return len(self._regions)

    def regions(self, country: str | None = None) -> list[dict[str, Any]]:
        """Regions sorted by name, optionally of one country (code matched without regard to case)."""
        wanted = country.upper() if country else None
        return [r.document for r in self._regions if wanted is None or r.country_code == wanted]

    def region(self, slug: str) -> dict[str, Any]:
        """One region with its dishes sorted by name."""
        try:
            return self._regions_by_slug[slug].detail
        except KeyError:
            raise NotFound("There is no region with this slug.") from None

    def dish(self, slug: str) -> dict[str, Any]:
        try:
            return self._dishes_by_slug[slug].document
        except KeyError:
            raise NotFound("There is no dish with this slug.") from None

    def dishes(self, query: DishQuery, limit: int = 20, cursor: str | None = None) -> Page:
        """One page of matching dishes sorted by name; ``total`` counts every match (docs/menus-api.md)."""
        fingerprint = query.fingerprint()
        matches = self._index.select(query)
        start = 0
        if cursor is not None:
            after = self._cursors.decode(cursor, fingerprint)
            start = bisect_right(matches, after, key=lambda dish: dish.sort_key)
        page = matches[start : start + limit]
        more = start + limit < len(matches)
        next_cursor = self._cursors.encode(page[-1].sort_key, fingerprint) if more and page else None
        return Page([dish.document for dish in page], len(matches), next_cursor, tuple(dish.fragment for dish in page))

    def random(self, query: DishQuery, count: int = 1, rng: random.Random | None = None) -> list[dict[str, Any]]:
        """``min(count, matches)`` distinct matching dishes in random order; NotFound when none match."""
        matches = self._index.select(query)
        if not matches:
            raise NotFound("No dish matches these filters.")
        picked = (rng or random).sample(matches, min(count, len(matches)))
        return [dish.document for dish in picked]


def dataset_directory() -> Path:
    return Path(str(resources.files("data") / "regions"))


def load_catalog(cursor_key: bytes, directory: Path | None = None) -> Catalog:
    """Load every ``<slug>.yaml`` of ``directory``, validate the whole dataset, and build the catalog."""
    directory = directory or dataset_directory()
    files = sorted(directory.glob("*.yaml"))
    records = []
    for path in files:
        try:
            with path.open(encoding="utf-8") as stream:
                records.append((path.name, safe_load(stream)))
        except yaml.YAMLError as error:
            raise DatasetError(f"{path.name}: not valid YAML: {error}") from None
    regions, dishes = build(records)
    return Catalog(regions, dishes, cursor_key)


def build(records: Iterable[tuple[str, Any]]) -> tuple[list[Region], list[Dish]]:
    """Validate raw region records (file name, parsed YAML) and turn them into regions and dishes."""
    regions: list[Region] = []
    dishes: list[Dish] = []
    dish_files: dict[str, str] = {}
    for filename, record in records:
        _check_region(filename, record)
        if record["slug"] in {region.slug for region in regions}:
            raise DatasetError(f"{filename}: region slug '{record['slug']}' is used by another region")
        for raw in record["dishes"]:
            _check_dish(filename, raw)
            if raw["slug"] in dish_files:
                raise DatasetError(
                    f"{filename}: dish '{raw['slug']}': slug is already used in {dish_files[raw['slug']]}"
                )
            dish_files[raw["slug"]] = filename
        region, region_dishes = _make_region(record)
        regions.append(region)
        dishes.extend(region_dishes)
    _check_whole(regions)
    return regions, dishes


def _make_region(record: Mapping[str, Any]) -> tuple[Region, list[Dish]]:
    summary = {"slug": record["slug"], "name": record["name"], "country_code": record["country_code"]}
    region_fold = fold(record["name"])
    dishes = sorted((_make_dish(raw, summary, region_fold) for raw in record["dishes"]), key=lambda d: d.sort_key)
    document = {
        "slug": record["slug"],
        "name": record["name"],
        "kind": record["kind"],
        "country_code": record["country_code"],
        "country": record["country"],
        "summary": record["summary"],
        "staples": list(record["staples"]),
        "dish_count": len(dishes),
    }
    detail = {**document, "dishes": [dish.region_document for dish in dishes]}
    region = Region(
        slug=record["slug"],
        name=record["name"],
        country_code=record["country_code"],
        sort_key=(fold(record["name"]), record["slug"]),
        document=document,
        detail=detail,
    )
    return region, dishes


def _make_dish(raw: Mapping[str, Any], region: dict[str, str], region_fold: str) -> Dish:
    region_document = {key: raw[key] for key in DISH_KEYS}
    region_document["ingredients"] = list(raw["ingredients"])
    region_document["tags"] = list(raw["tags"])
    searchable = [raw["name"], raw["local_name"] or "", region_fold, *raw["ingredients"], *raw["tags"]]
    document = {**region_document, "region": dict(region)}
    return Dish(
        slug=raw["slug"],
        name=raw["name"],
        region_slug=region["slug"],
        course=raw["course"],
        diet=raw["diet"],
        spice_level=raw["spice_level"],
        country_code=region["country_code"],
        sort_key=(fold(raw["name"]), raw["slug"]),
        haystack="\x1f".join(fold(text) for text in searchable),
        document=document,
        region_document=region_document,
        fragment=bytes(memoryview(orjson.dumps(document))),  # a copy: orjson's bytes keep their whole buffer
    )


def _checked_mapping(filename: str, raw: Any, kind: str, keys: Sequence[str], not_a_mapping: str) -> str:
    """Where a region or dish record stands, for the messages, once it is a mapping with the keys and a slug."""
    if not isinstance(raw, dict):
        raise DatasetError(f"{filename}: {not_a_mapping}")
    where = f"{filename}: {kind} '{raw.get('slug')}'"
    _check_keys(where, raw, keys)
    _check_slug(where, raw["slug"])
    return where


def _check_region(filename: str, record: Any) -> None:
    where = _checked_mapping(filename, record, "region", REGION_KEYS, "a region file holds one mapping")
    if f"{record['slug']}.yaml" != filename:
        raise DatasetError(f"{where}: the file must be named {record['slug']}.yaml")
    for key in ("name", "country", "summary"):
        _check_text(where, key, record[key])
    if record["kind"] not in KINDS:
        raise DatasetError(f"{where}: kind must be one of {', '.join(KINDS)}, got {record['kind']!r}")
    code = record["country_code"]
    if not (isinstance(code, str) and re.fullmatch(r"[A-Z]{2}", code) and pycountry.countries.get(alpha_2=code)):
        raise DatasetError(f"{where}: country_code must be an ISO 3166-1 alpha-2 code, got {code!r}")
    _check_words(where, "staples", record["staples"])
    dishes = record["dishes"]
    if not isinstance(dishes, list) or len(dishes) not in DISHES_PER_REGION:
        count = len(dishes) if isinstance(dishes, list) else "no list of"
        raise DatasetError(f"{where}: must have 9 or 10 dishes, has {count}")


def _check_dish(filename: str, raw: Any) -> None:
    where = _checked_mapping(filename, raw, "dish", DISH_KEYS, "every dish is a mapping")
    _check_text(where, "name", raw["name"])
    local_name = raw["local_name"]
    if local_name is not None:
        _check_text(where, "local_name", local_name)
        if local_name == raw["name"]:
            raise DatasetError(f"{where}: local_name repeats the name; it must be null instead")
    _check_text(where, "description", raw["description"])
    if not raw["description"].endswith((".", "!")) or len(raw["description"]) > 300:
        raise DatasetError(f"{where}: description must be one sentence ending with a period")
    if raw["course"] not in COURSES:
        raise DatasetError(f"{where}: course must be one of {', '.join(COURSES)}, got {raw['course']!r}")
    if raw["diet"] not in DIETS:
        raise DatasetError(f"{where}: diet must be one of {', '.join(DIETS)}, got {raw['diet']!r}")
    _check_level(where, "spice_level", raw["spice_level"], 0, 5)
    _check_level(where, "price_level", raw["price_level"], 1, 3)
    _check_words(where, "ingredients", raw["ingredients"])
    _check_words(where, "tags", raw["tags"])
    bad_tags = [tag for tag in raw["tags"] if not TAG.fullmatch(tag)]
    if bad_tags:
        raise DatasetError(f"{where}: tags must be lower-case and hyphenated, got {bad_tags[0]!r}")


def _check_whole(regions: Sequence[Region]) -> None:
    if len(regions) != REGION_COUNT:
        raise DatasetError(f"the dataset must hold {REGION_COUNT} regions, holds {len(regions)}")
    with_ten = [region.slug for region in regions if region.document["dish_count"] == 10]
    if len(with_ten) != REGIONS_WITH_TEN:
        raise DatasetError(f"exactly {REGIONS_WITH_TEN} regions must have 10 dishes; these do: {', '.join(with_ten)}")
    kinds = {region.document["kind"] for region in regions}
    missing = [kind for kind in KINDS if kind not in kinds]
    if missing:
        raise DatasetError(f"every region kind must be used at least once; unused: {', '.join(missing)}")


def _check_keys(where: str, record: Mapping[str, Any], expected: Sequence[str]) -> None:
    missing = [key for key in expected if key not in record]
    unknown = [key for key in record if key not in expected]
    if missing:
        raise DatasetError(f"{where}: missing field {missing[0]!r}")
    if unknown:
        raise DatasetError(f"{where}: unknown field {unknown[0]!r}")


def _check_slug(where: str, slug: Any) -> None:
    if not (isinstance(slug, str) and SLUG.fullmatch(slug) and len(slug) <= SLUG_MAX):
        raise DatasetError(f"{where}: slug must be lower-case ASCII words joined by hyphens, got {slug!r}")


def _check_text(where: str, key: str, value: Any) -> None:
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise DatasetError(f"{where}: {key} must be non-empty text without surrounding spaces")


def _check_level(where: str, key: str, value: Any, low: int, high: int) -> None:
    if type(value) is not int or not low <= value <= high:
        raise DatasetError(f"{where}: {key} must be an integer {low}-{high}, got {value!r}")


def _check_words(where: str, key: str, value: Any) -> None:
    if not isinstance(value, list) or not value:
        raise DatasetError(f"{where}: {key} must be a non-empty list")
    for item in value:
        if not isinstance(item, str) or not item.strip() or item != item.lower().strip():
            raise DatasetError(f"{where}: {key} must be lower-case text, got {item!r}")
    if len(set(value)) != len(value):
        raise DatasetError(f"{where}: {key} has a repeated item")
