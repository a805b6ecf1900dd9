"""Loops that assert: ``for item in each(items):`` checks, once the loop has run out, that it saw at least one
item. A test whose every assertion sits inside a loop over a list it computed (the operations of a document,
the nodes of a cluster, the dishes of a region) would otherwise pass, proving nothing, the day that list is empty.
``tests/unit/test_loops_assert_something.py`` finds the loops that need it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def each(items: Iterable[T], at_least: int = 1) -> Iterator[T]:
    """The items, one by one; when they run out, an AssertionError if there were fewer than ``at_least``."""
    seen = 0
    for item in items:
        seen += 1
        yield item
    assert seen >= at_least, f"the loop saw {seen} items, fewer than {at_least}: its assertions proved nothing"
