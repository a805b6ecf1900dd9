"""One rate limit for the whole deployment: two nodes of two workers each, one database, one Redis.

Two ``regional-menus serve --workers 2`` processes on different ports share a throw-away PostgreSQL
database and a Redis database of the test's own (``MENUS_RATE_LIMIT_STORAGE``), as two nodes behind
a load balancer would. One API key's requests, sent to both nodes at once within its first minute, get
the key's limit of 200s, whichever of the four workers answers them: a sliding window counter with no
previous minute admits exactly the limit (docs/nodes.md). Run it alone with
``pytest tests/system/test_rate_limit_nodes.py -s`` to see the figures.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from identity.keys.sealing import new_key
from tests.support.clocks import window_not_ending
from tests.support.live import live_service
from tests.support.postgres import throwaway_database

LIMIT = 30  # MENUS_RATE_LIMIT: requests a minute per key
REQUESTS = 120  # sent within a few seconds: four times the limit
PROCESSES = 4  # two nodes, two workers each


def test_two_nodes_of_two_workers_share_one_limit_per_key(
    tmp_path_factory: pytest.TempPathFactory, redis_url: str
) -> None:
    with throwaway_database() as database_url:
        env = {
            "MENUS_DATABASE_URL": database_url,
            "MENUS_RATE_LIMIT": str(LIMIT),
            "MENUS_RATE_LIMIT_STORAGE": redis_url,
            "MENUS_SECRET_KEYS": new_key(),  # nodes sharing a database share the keys of its secrets
        }
        folder_a: Path = tmp_path_factory.mktemp("limit-node-a")
        folder_b: Path = tmp_path_factory.mktemp("limit-node-b")
        with (
            live_service(folder_a, env, args=("--workers", "2")) as a,
            live_service(folder_b, env, args=("--workers", "2")) as b,
        ):
            key = a.api_key("shared")
            nodes = {"a": a.url, "b": b.url}

            def call(number: int) -> tuple[str, int]:
                node = "ab"[number % 2]
                response = requests.get(
                    f"{nodes[node]}/v1/menus/regions", headers={"Authorization": f"Bearer {key}"}, timeout=30
                )
                return node, response.status_code

            window_not_ending(margin=10.0)  # all of them within one minute of the limit (the burst takes seconds)
            with ThreadPoolExecutor(max_workers=8) as pool:
                answers = Counter(pool.map(call, range(REQUESTS)))
    figures = {node: {status: answers[(node, status)] for status in (200, 429)} for node in "ab"}
    print(f"\nlimit {LIMIT} a minute, {REQUESTS} requests over 2 nodes x 2 workers: {figures}")
    assert sum(answers.values()) == REQUESTS
    assert set(status for _, status in answers) <= {200, 429}
    ok = answers[("a", 200)] + answers[("b", 200)]
    assert LIMIT <= ok <= LIMIT + PROCESSES  # one limit, not one per process (which would allow 4 x 30)
    assert answers[("a", 200)] > 0 and answers[("b", 200)] > 0  # both nodes served
