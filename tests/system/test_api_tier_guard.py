"""The guard of the API tier (tests/support/api_tier.py, wired in tests/api/conftest.py): an API test that starts a
process or a listening server fails, naming what it started; one that holds a port nothing listens on passes. These
tests start processes and servers to show it, so they are system tests; outside ``watching()`` the guard is quiet."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.api_tier import Guard, StartedAProcess, install

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def guard() -> Guard:
    return install()  # this process's: an audit hook stays once added, so every test here shares it


def test_a_process_started_while_watching_is_refused_before_it_runs(guard: Guard, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    with guard.watching() as started:
        with pytest.raises(StartedAProcess, match="belongs in tests/system/"):
            subprocess.run([sys.executable, "-c", f"open({str(ran)!r}, 'w')"], check=True)
        with pytest.raises(StartedAProcess):
            os.system(f"touch {ran}")
    assert not ran.exists()
    assert [line.split(":")[0] for line in started] == [
        "started a process (subprocess.Popen",
        "started a process (os.system",
    ]


def test_a_listening_server_is_found_when_the_test_connects_to_it(guard: Guard) -> None:
    with guard.watching() as started:
        server = socket.create_server(("127.0.0.1", 0))
        address = server.getsockname()
        socket.create_connection(address).close()
        server.close()
    assert started == [f"started a listening server (a socket listening on {address})"]


def test_a_listening_server_still_open_is_found_at_the_end_of_the_phase(guard: Guard) -> None:
    server = None
    with guard.watching() as started:
        server = socket.create_server(("127.0.0.1", 0))
    assert server is not None
    server.close()
    assert len(started) == 1 and "listening" in started[0]


def test_an_asyncio_server_is_found(guard: Guard) -> None:
    async def serve_and_connect() -> None:
        server = await asyncio.start_server(lambda _, writer: writer.close(), "127.0.0.1", 0)
        _, writer = await asyncio.open_connection(*server.sockets[0].getsockname()[:2])
        writer.close()
        server.close()
        await server.wait_closed()

    with guard.watching() as started:
        asyncio.run(serve_and_connect())
    assert len(started) == 1 and "listening" in started[0]


def test_a_port_held_for_nothing_to_listen_on_is_allowed(guard: Guard) -> None:
    """An address a test needs unreachable (a Redis that is down): bound, never listening."""
    with guard.watching() as started:
        held = socket.socket()
        held.bind(("127.0.0.1", 0))
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(held.getsockname(), timeout=5)
        held.close()
    assert started == []


def test_outside_watching_the_guard_lets_everything_run(guard: Guard) -> None:
    assert subprocess.run([sys.executable, "-c", "pass"], check=False).returncode == 0


API_TESTS = """
import socket
import subprocess
import sys


def test_starts_a_process():
    subprocess.run([sys.executable, "-c", "pass"])


def test_listens():
    server = socket.create_server(("127.0.0.1", 0))
    socket.create_connection(server.getsockname()).close()
    server.close()


def test_holds_a_port_nothing_listens_on():
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.close()
"""


def test_the_api_tiers_conftest_fails_a_test_that_starts_a_process_or_a_server(tmp_path: Path) -> None:
    """tests/api/conftest.py itself, beside three API tests of its own, in a pytest run of their own."""
    api = tmp_path / "api"
    api.mkdir()
    shutil.copy(ROOT / "tests" / "api" / "conftest.py", api / "conftest.py")
    (api / "test_tier.py").write_text(API_TESTS)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-rA", str(api)],
        cwd=tmp_path,
        # COLUMNS: the summary's lines whole; pytest cuts them to the terminal's width (80 without one) unless CI is set
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "400"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "2 failed, 1 passed" in done.stdout, done.stdout + done.stderr
    assert "PASSED api/test_tier.py::test_holds_a_port_nothing_listens_on" in done.stdout
    assert "FAILED api/test_tier.py::test_starts_a_process - tests.support.api_tier.StartedAProcess" in done.stdout
    assert "FAILED api/test_tier.py::test_listens - Failed: api/test_tier.py::test_listens started a listening" in (
        done.stdout
    )
