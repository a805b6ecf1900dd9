"""The service served over real HTTP from the test's own process (uvicorn in a thread), for the system tests that
move its clock (``tests/support/clocks.MovableClock``): a secret's grace, a link's lifetime. ``live_service`` runs a
separate process, whose time a test cannot move.

uvicorn's documented way to run a server programmatically: ``Server(Config(...))``, ``run`` in a thread (uvicorn
installs signal handlers only in the main thread), stopped with ``should_exit``, the flag its own signal handlers
set.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from sqlalchemy.engine import Engine

from service.database.db import make_engine
from service.database.schema import upgrade
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.clocks import MovableClock
from tests.support.defaults import POOL
from tests.support.live import free_port


@dataclass
class InProcess:
    url: str
    settings: Settings
    clock: MovableClock
    engine: Engine


@contextmanager
def in_process_service(workdir: Path, **settings: Any) -> Iterator[InProcess]:
    """The whole service on a free loopback port, its state in SQLite under ``workdir``, every object reading one
    ``MovableClock``; ``settings`` on top of the tests' defaults (outbound loopback allowed, responses validated)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    database_url = f"sqlite:///{workdir / 'state.sqlite3'}"
    chosen = Settings(
        database_url=database_url,
        base_url=url,
        issuer=url,
        validate_responses=True,
        outbound_loopback=True,
        **settings,
    )
    engine = make_engine(database_url, POOL)
    upgrade(engine)
    clock = MovableClock()
    app = make_app(chosen, clock=clock)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on"))
    thread = threading.Thread(target=server.run, name="in-process service", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{url}/healthz", timeout=1).close()
            break
        except OSError:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the in-process service did not start") from None
            time.sleep(0.05)
    try:
        yield InProcess(url, chosen, clock, engine)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        engine.dispose()
