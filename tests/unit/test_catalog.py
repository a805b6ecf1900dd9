"""The catalog's rules (openapi/menus.yaml, docs/menus-api.md), without the web layer."""

from __future__ import annotations

import itertools
import random

import orjson
import pytest

from cursors import InvalidCursor
from data.catalog import COURSES, DIET_INCLUDES, DIETS, Catalog, DishQuery
from data.catalog_errors import NotFound
from data.folding import fold
from tests.support.loops import each


def all_pages(catalog: Catalog, query: DishQuery, limit: int) -> list[dict]:
    seen, cursor = [], None
    while True:
        page = catalog.dishes(query, limit=limit, cursor=cursor)
        seen.extend(page.items)
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor


def test_dishes_are_sorted_by_folded_name_then_slug(catalog: Catalog) -> None:
    dishes = all_pages(catalog, DishQuery(), limit=100)
    keys = [(fold(d["name"]), d["slug"]) for d in dishes]
    assert keys == sorted(keys)
    assert len(dishes) == 146


@pytest.mark.parametrize("limit", [1, 7, 20, 100])
def test_paging_visits_every_match_exactly_once(catalog: Catalog, limit: int) -> None:
    query = DishQuery(max_spice=3)
    pages = all_pages(catalog, query, limit)
    expected = catalog.dishes(query, limit=100).total
    assert len(pages) == expected
    assert len({d["slug"] for d in pages}) == expected


def test_total_counts_every_match_not_just_the_page(catalog: Catalog) -> None:
    page = catalog.dishes(DishQuery(), limit=5)
    assert len(page.items) == 5
    assert page.total == 146


def test_last_page_has_no_next_cursor(catalog: Catalog) -> None:
    page = catalog.dishes(DishQuery(region="kerala"), limit=9)
    assert page.total == 9 and page.next_cursor is None


def test_filter_matching_nothing_gives_an_empty_page(catalog: Catalog) -> None:
    page = catalog.dishes(DishQuery(region="atlantis"))
    assert (page.items, page.total, page.next_cursor) == ([], 0, None)


@pytest.mark.parametrize(
    ("diet", "allowed"),
    [
        ("vegan", {"vegan"}),
        ("vegetarian", {"vegan", "vegetarian"}),
        ("eggetarian", {"vegan", "vegetarian", "eggetarian"}),
        ("pescatarian", {"vegan", "vegetarian", "eggetarian", "pescatarian"}),
        ("non_vegetarian", {"vegan", "vegetarian", "eggetarian", "pescatarian", "non_vegetarian"}),
    ],
)
def test_diet_filter_includes_its_inclusion_set(catalog: Catalog, diet: str, allowed: set[str]) -> None:
    assert DIET_INCLUDES[diet] == allowed
    every = all_pages(catalog, DishQuery(), 100)
    matched = all_pages(catalog, DishQuery(diet=diet), 100)
    assert {d["slug"] for d in matched} == {d["slug"] for d in every if d["diet"] in allowed}


def test_vegetarian_filter_also_returns_vegan_dishes(catalog: Catalog) -> None:
    diets = {d["diet"] for d in all_pages(catalog, DishQuery(diet="vegetarian"), 100)}
    assert diets == {"vegan", "vegetarian"}


def test_non_vegetarian_filter_returns_every_dish(catalog: Catalog) -> None:
    assert catalog.dishes(DishQuery(diet="non_vegetarian")).total == 146


def test_filters_combine_region_course_and_max_spice(catalog: Catalog) -> None:
    dishes = all_pages(catalog, DishQuery(country="in", course="main", max_spice=2), 100)
    assert dishes
    assert all(d["region"]["country_code"] == "IN" and d["course"] == "main" for d in dishes)
    assert all(d["spice_level"] <= 2 for d in dishes)


def test_country_is_matched_without_regard_to_case(catalog: Catalog) -> None:
    assert catalog.dishes(DishQuery(country="jp")).total == catalog.dishes(DishQuery(country="JP")).total == 10


def test_search_ignores_accents_and_case(catalog: Catalog) -> None:
    names = [d["name"] for d in catalog.dishes(DishQuery(q="CREME brulee")).items]
    assert names == ["Crème brûlée"]


def test_search_matches_region_name_without_accents(catalog: Catalog) -> None:
    dishes = all_pages(catalog, DishQuery(q="sao"), 100)
    assert {d["region"]["slug"] for d in dishes} >= {"sao-paulo"}
    assert sum(d["region"]["slug"] == "sao-paulo" for d in dishes) == 9


def test_search_requires_every_term(catalog: Catalog) -> None:
    both = all_pages(catalog, DishQuery(q="paneer punjab"), 100)
    assert both and all(d["region"]["slug"] == "punjab" for d in both)
    assert catalog.dishes(DishQuery(q="paneer sushi")).total == 0


def test_search_covers_local_names_ingredients_and_tags(catalog: Catalog) -> None:
    dish = catalog.dish("creme-brulee")
    assert catalog.dishes(DishQuery(q=dish["ingredients"][0] + " " + dish["tags"][0])).total >= 1
    sushi_like = next(d for d in all_pages(catalog, DishQuery(region="japan"), 100) if d["local_name"])
    found = all_pages(catalog, DishQuery(q=sushi_like["local_name"]), 100)
    assert sushi_like["slug"] in {d["slug"] for d in found}


def test_search_does_not_match_the_description(catalog: Catalog) -> None:
    dish = catalog.dish("creme-brulee")
    word = next(w for w in dish["description"].lower().split() if len(w) > 6 and w.isalpha())
    matched = {d["slug"] for d in all_pages(catalog, DishQuery(q=word), 100)}
    assert all(
        word in fold(" ".join([d["name"], d["local_name"] or "", d["region"]["name"], *d["ingredients"], *d["tags"]]))
        for d in all_pages(catalog, DishQuery(), 100)
        if d["slug"] in matched
    )


def test_cursor_continues_after_the_last_item(catalog: Catalog) -> None:
    first = catalog.dishes(DishQuery(), limit=3)
    second = catalog.dishes(DishQuery(), limit=3, cursor=first.next_cursor)
    whole = catalog.dishes(DishQuery(), limit=6)
    assert first.items + second.items == whole.items


def test_cursor_of_other_filters_is_refused(catalog: Catalog) -> None:
    cursor = catalog.dishes(DishQuery(course="main"), limit=2).next_cursor
    assert cursor
    with pytest.raises(InvalidCursor, match="other filters"):
        catalog.dishes(DishQuery(course="dessert"), limit=2, cursor=cursor)


def test_cursor_survives_equivalent_filters(catalog: Catalog) -> None:
    cursor = catalog.dishes(DishQuery(country="in", q="Rice  Coconut"), limit=1).next_cursor
    assert catalog.dishes(DishQuery(country="IN", q="rice coconut"), limit=1, cursor=cursor).items


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty-body"])
def test_forged_or_truncated_cursor_is_refused(catalog: Catalog, damage: str) -> None:
    cursor = catalog.dishes(DishQuery(), limit=2).next_cursor
    assert cursor
    forged = {
        "truncate": cursor[:-5],
        "flip": cursor[:10] + ("A" if cursor[10] != "A" else "B") + cursor[11:],
        "garbage": "not-a-cursor",
        "empty-body": "AQ",
    }[damage]
    with pytest.raises(InvalidCursor):
        catalog.dishes(DishQuery(), limit=2, cursor=forged)


def test_cursor_made_with_another_key_is_refused(catalog: Catalog) -> None:
    from data.catalog import load_catalog

    other = load_catalog(cursor_key=b"o" * 32)
    cursor = other.dishes(DishQuery(), limit=2).next_cursor
    with pytest.raises(InvalidCursor, match="altered"):
        catalog.dishes(DishQuery(), limit=2, cursor=cursor)


def test_random_returns_distinct_matching_dishes(catalog: Catalog) -> None:
    rng = random.Random(7)
    for _ in range(50):
        picked = catalog.random(DishQuery(course="dessert"), count=10, rng=rng)
        assert len({d["slug"] for d in picked}) == len(picked) == 10
        assert all(d["course"] == "dessert" for d in picked)


def test_random_returns_fewer_when_fewer_match(catalog: Catalog) -> None:
    assert len(catalog.random(DishQuery(q="creme brulee"), count=10)) == 1


def test_random_with_no_match_is_not_found(catalog: Catalog) -> None:
    with pytest.raises(NotFound):
        catalog.random(DishQuery(q="unicorn"), count=3)


def test_regions_are_sorted_by_name_and_filtered_by_country(catalog: Catalog) -> None:
    regions = catalog.regions()
    assert [fold(r["name"]) for r in regions] == sorted(fold(r["name"]) for r in regions)
    assert {r["slug"] for r in catalog.regions("in")} == {"punjab", "kerala", "tamil-nadu", "west-bengal", "hyderabad"}


def test_region_detail_lists_its_dishes_by_name_without_region_field(catalog: Catalog) -> None:
    region = catalog.region("punjab")
    assert region["dish_count"] == len(region["dishes"]) == 10
    assert [fold(d["name"]) for d in region["dishes"]] == sorted(fold(d["name"]) for d in region["dishes"])
    assert all("region" not in d for d in region["dishes"])


def test_unknown_slugs_are_not_found(catalog: Catalog) -> None:
    with pytest.raises(NotFound):
        catalog.region("atlantis")
    with pytest.raises(NotFound):
        catalog.dish("unicorn-stew")


def test_filter_index_selects_exactly_what_the_rule_matches(catalog: Catalog) -> None:
    dishes = catalog._dishes  # the rule, applied one dish at a time, is the reference for the index
    queries = (
        [
            DishQuery(region=region, course=course, diet=diet, max_spice=spice, q=q)
            for region, course, diet, spice, q in itertools.product(
                (None, "kerala", "nowhere"),
                (None, *COURSES[:3]),
                (None, *DIETS),
                (None, 0, 3, 5),
                (None, "rice", "zzz"),
            )
        ]
        + [DishQuery(country=c) for c in ("in", "JP", "ZZ")]
        + [DishQuery(q="creme brulee"), DishQuery(q="sao paulo")]
    )
    for query in each(queries):
        assert catalog._index.select(query) == [d for d in dishes if query.matches(d)], query


def test_page_json_is_byte_for_byte_the_serialised_document(catalog: Catalog) -> None:
    for query, limit in ((DishQuery(), 20), (DishQuery(q="zzz"), 5), (DishQuery(course="dessert"), 100)):
        page = catalog.dishes(query, limit=limit)
        document = {"data": page.items, "total": page.total, "next_cursor": page.next_cursor}
        assert page.json() == orjson.dumps(document)
