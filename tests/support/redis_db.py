"""A Redis database of the test's own on the machine's Redis (``MENUS_TEST_REDIS_URL``, else 127.0.0.1:6379).

Each pytest-xdist worker gets its own database number (``REDIS_BASE_DB`` + the worker's index), flushed
before and after each test that uses it, so parallel workers never see each other's counters.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

REDIS_SERVER = os.environ.get("MENUS_TEST_REDIS_URL", "redis://127.0.0.1:6379").rstrip("/")  # scripts/test sets it
REDIS_BASE_DB = 8  # databases 8 and up are the tests'; 0 to 7 are left to whoever else uses this Redis


def worker_database() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")  # "gw3" under xdist; absent without it
    number = REDIS_BASE_DB + int(worker.removeprefix("gw") or 0)
    if number > 15:
        raise RuntimeError(f"Redis has 16 databases by default: too many xdist workers for {worker}")
    return number


@pytest.fixture
def redis_url() -> Iterator[str]:
    """``<MENUS_TEST_REDIS_URL>/<8 + worker index>``, empty at the start and flushed at the end."""
    database = worker_database()
    url = f"{REDIS_SERVER}/{database}"
    connection = redis.Redis.from_url(url, socket_timeout=2)
    try:
        try:
            connection.flushdb()
        except redis.exceptions.ConnectionError as error:
            pytest.fail(f"Redis at {REDIS_SERVER} cannot be reached ({error}); the Redis tests need it")
        yield url
        connection.flushdb()
    finally:
        connection.close()
