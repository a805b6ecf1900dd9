"""A revoked API key across processes: two apps over one database stand in for two nodes (each answers keys
from memory, service/menus_api/key_cache.py), and a revocation made elsewhere (the command line) is refused by
both within the revocation bound (``key_revocation_bound``, 1 s), on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from data.catalog import Catalog
from identity.api_keys.keys import ApiKeyStore
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.clocks import MovableClock
from tests.support.defaults import KEY_REVOCATION_BOUND
from tests.support.loops import each

REGIONS = "/v1/menus/regions"


ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


STEP = KEY_REVOCATION_BOUND / 10  # how far the nodes' clock moves between two rounds of requests


@pytest.fixture
def two_nodes(
    settings: Settings, engine: object, catalog: Catalog, clock: MovableClock
) -> Iterator[tuple[TestClient, TestClient]]:
    """Two nodes on one clock (``clock``): a test moves time for both."""
    with (
        TestClient(make_app(settings, catalog=catalog, clock=clock)) as a,
        TestClient(make_app(settings, catalog=catalog, clock=clock)) as b,
    ):
        yield a, b


def test_a_key_revoked_elsewhere_is_refused_by_every_node_within_the_bound(
    two_nodes: tuple[TestClient, TestClient], keys: ApiKeyStore, clock: MovableClock
) -> None:
    record, key = keys.create("two nodes")
    headers = {"Authorization": f"Bearer {key}"}
    for node in each(two_nodes):
        for _ in range(3):  # seen live: answered from memory from now on
            assert node.get(REGIONS, headers=headers).status_code == 200
    keys.revoke(record.id)  # a third process: the command line
    revoked_at = clock.monotonic()
    refused: set[int] = set()
    while len(refused) < len(two_nodes):
        for index, node in enumerate(each(two_nodes)):
            started = clock.monotonic()
            status = node.get(REGIONS, headers=headers).status_code
            if status == 200:
                assert index not in refused, "refused once, refused for good"
                assert started - revoked_at < KEY_REVOCATION_BOUND, "answered past the revocation bound"
            else:
                assert status == 401
                refused.add(index)
        clock.advance(STEP)  # time passes for both nodes, without waiting for it
    for node in each(two_nodes):
        assert node.get(REGIONS, headers=headers).status_code == 401


def test_a_key_made_after_a_revocation_is_answered_at_once(
    two_nodes: tuple[TestClient, TestClient], keys: ApiKeyStore
) -> None:
    """Forgetting every key on a revocation costs a lookup each, never a refusal of a live key."""
    old, old_key = keys.create("old")
    for node in each(two_nodes):
        assert node.get(REGIONS, headers={"Authorization": f"Bearer {old_key}"}).status_code == 200
    keys.revoke(old.id)
    _, key = keys.create("new")
    for node in each(two_nodes):
        assert node.get(REGIONS, headers={"Authorization": f"Bearer {key}"}).status_code == 200
