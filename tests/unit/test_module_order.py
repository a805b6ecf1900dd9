"""The order in which the modules go to the xdist workers (tests/conftest.py: longest_first): by the measured
durations of tests/durations.json, longest first, a module the table lacks counting as the median of its tier."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import longest_first
from tests.support.module_durations import TABLE, TESTS, Estimate, load, module_of

ROOT = TESTS.parent


@dataclass(frozen=True)
class Item:  # what longest_first reads of a pytest.Item
    path: Path
    name: str


def items(*modules_and_names: tuple[str, str]) -> list[Any]:
    return [Item(ROOT / module, name) for module, name in modules_and_names]


def test_the_longest_module_goes_first_whatever_its_tier_and_each_keeps_its_own_order() -> None:
    table = {"tests/api/test_a.py": 90.0, "tests/system/test_b.py": 40.0, "tests/unit/test_c.py": 60.0}
    given = items(
        ("tests/system/test_b.py", "1"), ("tests/unit/test_c.py", "1"), ("tests/api/test_a.py", "1"),
        ("tests/system/test_b.py", "2"), ("tests/api/test_a.py", "2"), ("tests/unit/test_c.py", "2"),
    )  # fmt: skip
    ordered = [(module_of(item.path), item.name) for item in longest_first(given, table)]
    assert ordered == [
        ("tests/api/test_a.py", "1"), ("tests/api/test_a.py", "2"), ("tests/unit/test_c.py", "1"),
        ("tests/unit/test_c.py", "2"), ("tests/system/test_b.py", "1"), ("tests/system/test_b.py", "2"),
    ]  # fmt: skip


def test_a_module_the_table_lacks_counts_as_the_median_module_of_its_tier() -> None:
    table = {"tests/system/test_a.py": 100.0, "tests/system/test_b.py": 30.0, "tests/system/test_c.py": 10.0}
    table |= {"tests/unit/test_d.py": 2.0}
    estimate = Estimate(table)
    assert estimate("tests/system/test_new.py") == 30.0
    assert estimate("tests/unit/test_new.py") == 2.0
    assert estimate("tests/api/test_new.py") == 0.0  # no API module measured: after every measured one
    given = items(("tests/unit/test_d.py", "1"), ("tests/system/test_new.py", "1"), ("tests/system/test_a.py", "1"))
    assert [module_of(item.path) for item in longest_first(given, table)] == [
        "tests/system/test_a.py",
        "tests/system/test_new.py",
        "tests/unit/test_d.py",
    ]


def test_the_checked_in_table_names_only_modules_that_exist_with_their_seconds() -> None:
    table = load(TABLE)
    assert table, "tests/durations.json is empty: make it with scripts/test --record-durations"
    assert all((ROOT / module).is_file() and module.startswith("tests/") for module in table)
    assert all(isinstance(seconds, float | int) and seconds >= 0 for seconds in table.values())
