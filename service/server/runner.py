"""Running the service: one uvicorn process, or gunicorn supervising uvicorn workers.

Without ``--workers`` the command line runs a single uvicorn process (development,
the demo). With ``--workers N`` gunicorn's master binds the socket and keeps N
uvicorn workers alive: it restarts a worker that dies and, on SIGTERM, stops
accepting and gives each worker ``graceful_timeout`` seconds to finish what it
is answering. The master builds the app once, before it binds the socket
(gunicorn's ``preload_app``), closes the connections the build opened, and forks
the workers from it: a node refuses connections until it can answer them (a
proxy sends them to another node at once, where a bound socket kept them waiting
for the workers' start-up), and a worker that dies is replaced in milliseconds.
Each worker opens its own database connections after the fork, and runs the
app's lifespan (its background jobs) itself: nothing that holds a connection or
a thread is shared between processes.

Both run uvicorn's httptools protocol with bounded request heads (``service.server.bounded_http``) on the event
loop uvicorn picks itself (``loop="auto"``: uvloop where it is installed, as it is with this package, else
asyncio's), and without uvicorn's own handling of ``X-Forwarded-For`` (which trusts 127.0.0.1 by default): the app
believes forwarded headers only from ``MENUS_TRUSTED_PROXIES`` (``service.web.forwarded``).

Connections the process has not accepted yet wait in the kernel's accept queue, ``backlog`` long: uvicorn's and
gunicorn's default, 2,048, capped by the kernel's ``net.core.somaxconn``. A worker cannot refuse what it has not
read; in front of the nodes, the proxy bounds the connections each worker is given (docs/nodes.md, Overload).
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp

from service.ops import logs, multiprocess
from service.server.bounded_http import HeadLimits, bounded_protocol
from service.server.collection import freeze_startup_objects, pause_collection, resume_collection


@dataclass(frozen=True, slots=True)
class Listen:
    host: str
    port: int
    keep_alive: int  # seconds an idle keep-alive connection stays open
    graceful_timeout: int  # seconds in-flight requests may take to finish after SIGTERM (gunicorn)
    head_limits: HeadLimits  # size, lines and time of a request head

    @property
    def bind(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


if TYPE_CHECKING:
    from uvicorn_worker import UvicornWorker

# uvicorn's settings, for gunicorn's workers and for one process alike. access_log off: service.ops.observe
# writes one JSON line per request. No WebSocket protocol: the service has no WebSocket route, and uvicorn would
# import the websockets package for it. proxy_headers off: service.web.forwarded reads them, from
# MENUS_TRUSTED_PROXIES only.
WORKER_CONFIG: dict[str, Any] = {
    "loop": "auto",
    "ws": "none",
    "lifespan": "on",
    "access_log": False,
    "proxy_headers": False,
}


def worker_class(limits: HeadLimits) -> type[UvicornWorker]:
    """The worker class given to gunicorn: a uvicorn worker that runs the app's lifespan (start-up checks, purge
    task, clean shutdown), serving with the bounded protocol of ``limits``. uvicorn-worker and gunicorn are
    imported here, under ``--workers`` only: one uvicorn process never loads them (start-up time and memory)."""
    from uvicorn_worker import UvicornWorker

    class Worker(UvicornWorker):  # type: ignore[misc]  # uvicorn-worker's class is untyped for mypy
        CONFIG_KWARGS = {**WORKER_CONFIG, "http": bounded_protocol(limits)}

        def init_signals(self) -> None:
            super().init_signals()
            for each in (signal.SIGTERM, signal.SIGINT):
                signal.signal(each, _write_logs_then_end)

    return Worker


def _write_logs_then_end(number: int, _frame: object) -> None:
    """A worker's SIGTERM or SIGINT as uvicorn raises it again once it has drained (and before it serves): the log
    lines still waiting in their batch (``service.ops.logs``) are written, then the signal ends the process as it
    did (gunicorn reads the worker's end from it)."""
    logging.shutdown()
    signal.signal(number, signal.SIG_DFL)
    signal.raise_signal(number)


def run_single(app: ASGIApp, listen: Listen) -> None:
    import uvicorn

    # uvicorn drains on SIGTERM, then raises the signal again for the handler it found: make that an exit 0.
    signal.signal(signal.SIGTERM, _stopped)
    freeze_startup_objects()
    uvicorn.run(
        app,
        host=listen.host,
        port=listen.port,
        **WORKER_CONFIG,  # the workers' settings, the same in one process
        http=bounded_protocol(listen.head_limits),
        timeout_keep_alive=listen.keep_alive,
        log_config=None,  # service.ops.logs has set up JSON lines
    )


def _stopped(_signal: int, _frame: object) -> None:
    """SIGTERM outside uvicorn's own handler (before it serves, or after it drained): a normal, successful stop."""
    raise SystemExit(0)


def run_workers(make_app: Callable[[], ASGIApp], listen: Listen, workers: int) -> None:
    """Serve with gunicorn and ``workers`` uvicorn workers; ``make_app`` runs once, in the master, before it binds
    the socket and forks the workers (``make_app`` leaves no connection open: the workers open their own).

    The metrics directory is prepared first, before anything imports prometheus_client (service.ops.multiprocess).
    """
    multiprocess.prepare_directory()
    resume_collection()  # gunicorn's own start-up; the app's build pauses it again (load, below)
    logs.lean_records()  # the workers inherit it
    _gunicorn_app(make_app, listen, workers).run()


def _gunicorn_app(make_app: Callable[[], ASGIApp], listen: Listen, workers: int) -> Any:
    """gunicorn's application for ``run_workers``: gunicorn is imported here, never by one uvicorn process."""
    from gunicorn.app.base import BaseApplication

    class Gunicorn(BaseApplication):  # type: ignore[misc]  # gunicorn ships no type hints
        def __init__(self) -> None:
            self.make_app = make_app
            self.options = {
                "bind": [listen.bind],
                "workers": workers,
                "worker_class": worker_class(listen.head_limits),
                "graceful_timeout": listen.graceful_timeout,
                "keepalive": listen.keep_alive,
                "preload_app": True,  # built before the bind, forked into each worker (see above)
                "errorlog": "-",
                "loglevel": "info",
                "logconfig_dict": logs.dict_config(),  # JSON lines from the master and the workers
                "child_exit": multiprocess.child_exit,  # metrics: a worker has exited
                "proc_name": "regional-menus",
                "control_socket_disable": True,  # no gunicornc socket in the home directory, shared by every node
            }
            super().__init__()

        def load_config(self) -> None:
            for name, value in self.options.items():
                self.cfg.set(name, value)

        def load(self) -> ASGIApp:
            # In the master (preload_app): the objects the build made are frozen before the fork, as the gc
            # module's documentation advises, so that no worker's collection writes to the pages they share.
            pause_collection()
            app = self.make_app()
            freeze_startup_objects()  # and collects again
            return app

    return Gunicorn()
