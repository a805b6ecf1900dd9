"""A Redis database of the test's own on the machine's Redis (127.0.0.1:6379), started by nobody here.

Each pytest-xdist worker gets its own database number (``REDIS_BASE_DB`` + the worker's index), flushed
before and after each test that uses it, so parallel workers never see each other's counters.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

REDIS_HOST = "127.0.0.1"
REDIS_PORT = 6379
REDIS_BASE_DB = 8  # databases 8 and up are the tests'; 0 to 7 are left to whoever else uses this Redis


def worker_database() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")  # "gw3" under xdist; absent without it
    number = REDIS_BASE_DB + int(worker.removeprefix("gw") or 0)
    if number > 15:
        raise RuntimeError(f"Redis has 16 databases by default: too many xdist workers for {worker}")
    return number


@pytest.fixture
def redis_url() -> Iterator[str]:
    """``redis://127.0.0.1:6379/<8 + worker index>``, empty at the start and flushed at the end."""
    database = worker_database()
    connection = redis.Redis(host=REDIS_HOST, port=REDIS_PORT, db=database, socket_timeout=2)
    try:
        connection.flushdb()
        yield f"redis://{REDIS_HOST}:{REDIS_PORT}/{database}"
        connection.flushdb()
    finally:
        connection.close()
