"""The dataset's invariants (the README's 146 dishes from 16 regions, openapi/menus.yaml's fields and bounds),
and the loader's refusal of broken data."""

from __future__ import annotations

import copy
import re
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from data.catalog import COURSES, DIETS, KINDS, DatasetError, build, dataset_directory, load_catalog
from data.yaml_text import safe_load
from tests.support.loops import each

SCRIPTS = {  # the script local names are written in, by country
    "IN": None,  # several; checked per region below
    "JP": ("CJK", "HIRAGANA", "KATAKANA"),
    "TH": ("THAI",),
    "LB": ("ARABIC",),
    "GR": ("GREEK",),
    "ET": ("ETHIOPIC",),
    "CN": ("CJK",),
}
INDIAN_SCRIPTS = {
    "punjab": "GURMUKHI",
    "kerala": "MALAYALAM",
    "tamil-nadu": "TAMIL",
    "west-bengal": "BENGALI",
    "hyderabad": "ARABIC",
}


def records() -> list[tuple[str, Any]]:
    return [(p.name, safe_load(p.read_text(encoding="utf-8"))) for p in sorted(dataset_directory().glob("*.yaml"))]


@pytest.fixture(scope="module")
def raw() -> list[tuple[str, Any]]:
    return records()


def test_dataset_has_16_regions_and_146_dishes(raw: list[tuple[str, Any]]) -> None:
    assert len(raw) == 16
    assert sum(len(r["dishes"]) for _, r in raw) == 146


def test_two_regions_have_10_dishes_and_the_others_9(raw: list[tuple[str, Any]]) -> None:
    assert Counter(len(r["dishes"]) for _, r in raw) == {9: 14, 10: 2}


def test_every_region_kind_is_used(raw: list[tuple[str, Any]]) -> None:
    assert {r["kind"] for _, r in raw} == set(KINDS)


def test_slugs_are_unique_lower_case_ascii(raw: list[tuple[str, Any]]) -> None:
    slugs = [r["slug"] for _, r in raw] + [d["slug"] for _, r in raw for d in r["dishes"]]
    dish_slugs = [d["slug"] for _, r in raw for d in r["dishes"]]
    assert len(set(dish_slugs)) == len(dish_slugs)
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", s) and len(s) <= 60 for s in slugs)


def test_fields_are_within_their_enums_and_ranges(raw: list[tuple[str, Any]]) -> None:
    for _, region in each(raw):
        for dish in each(region["dishes"]):
            assert dish["course"] in COURSES
            assert dish["diet"] in DIETS
            assert 0 <= dish["spice_level"] <= 5
            assert 1 <= dish["price_level"] <= 3
            assert dish["ingredients"] and dish["tags"]
            assert dish["description"].endswith(".")


def test_local_names_are_in_the_regions_script_or_null(raw: list[tuple[str, Any]]) -> None:
    for _, region in each(raw):
        code = region["country_code"]
        scripts = (INDIAN_SCRIPTS[region["slug"]],) if code == "IN" else SCRIPTS.get(code)
        for dish in each(region["dishes"]):
            local = dish["local_name"]
            assert local != dish["name"], dish["slug"]
            if local is None or scripts is None:
                continue  # Latin-script regions: a local name in Latin letters is right
            letters = [unicodedata.name(c, "") for c in local if c.isalpha()]
            assert any(name.startswith(scripts) for name in letters), (dish["slug"], local)


def test_dataset_uses_every_course_and_diet(raw: list[tuple[str, Any]]) -> None:
    dishes = [d for _, r in raw for d in r["dishes"]]
    assert {d["course"] for d in dishes} == set(COURSES)
    assert {d["diet"] for d in dishes} == set(DIETS)


def test_loader_accepts_the_shipped_dataset() -> None:
    catalog = load_catalog(cursor_key=b"k" * 32)
    assert (catalog.region_count, catalog.dish_count) == (16, 146)


def _broken(mutate: Any) -> list[tuple[str, Any]]:
    data = copy.deepcopy(records())
    mutate(data)
    return data


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d[0][1]["dishes"][0].update(spice_level=7), r"dish '[a-z-]+': spice_level must be an integer 0-5"),
        (lambda d: d[0][1]["dishes"][0].update(price_level=0), r"price_level must be an integer 1-3"),
        (lambda d: d[0][1]["dishes"][0].update(course="brunch"), r"course must be one of"),
        (lambda d: d[0][1]["dishes"][0].update(diet="keto"), r"diet must be one of"),
        (lambda d: d[0][1]["dishes"][0].update(slug="Bad Slug"), r"slug must be lower-case ASCII"),
        (lambda d: d[0][1]["dishes"][0].pop("tags"), r"missing field 'tags'"),
        (lambda d: d[0][1]["dishes"][0].update(colour="red"), r"unknown field 'colour'"),
        (lambda d: d[0][1]["dishes"][0].update(local_name=d[0][1]["dishes"][0]["name"]), r"local_name repeats"),
        (lambda d: d[0][1]["dishes"][1].update(slug=d[0][1]["dishes"][0]["slug"]), r"slug is already used"),
        (lambda d: d[1][1]["dishes"][0].update(slug=d[0][1]["dishes"][0]["slug"]), r"slug is already used in"),
        (lambda d: d[0][1].update(country_code="XX"), r"country_code must be an ISO 3166-1 alpha-2 code"),
        (lambda d: d[0][1].update(kind="planet"), r"kind must be one of"),
        (lambda d: d[0][1]["dishes"].pop(), r"must have 9 or 10 dishes"),
        (lambda d: d.pop(), r"must hold 16 regions"),
        (lambda d: d[0][1]["dishes"][0].update(ingredients=[]), r"ingredients must be a non-empty list"),
        (lambda d: d[0][1]["dishes"][0].update(tags=["Street Food"]), r"tags must be lower-case"),
    ],
)
def test_loader_refuses_a_broken_dataset_naming_the_record(mutate: Any, message: str) -> None:
    with pytest.raises(DatasetError, match=message) as refused:
        build(_broken(mutate))
    assert str(refused.value).split(":")[0].endswith(".yaml") or "regions" in str(refused.value)


def test_loader_refuses_a_file_named_after_another_region(tmp_path: Path) -> None:
    for path in dataset_directory().glob("*.yaml"):
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "punjab.yaml").rename(tmp_path / "panjab.yaml")
    with pytest.raises(DatasetError, match=r"panjab.yaml: region 'punjab': the file must be named punjab.yaml"):
        load_catalog(cursor_key=b"k" * 32, directory=tmp_path)


def test_loader_refuses_invalid_yaml(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("slug: [unclosed", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"broken.yaml: not valid YAML"):
        load_catalog(cursor_key=b"k" * 32, directory=tmp_path)
