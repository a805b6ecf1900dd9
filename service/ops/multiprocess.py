"""Metrics across gunicorn's workers: the directory of files that prometheus_client's multiprocess mode shares.

Under ``serve --workers N`` each worker writes its counts to files of its own in
``PROMETHEUS_MULTIPROC_DIR`` and a scrape sums them all (``service.ops.metrics``). Two rules make that
right: the directory must be empty before the first worker starts (an earlier run's files would be
added in), and the variable must be set before anything imports prometheus_client, which reads it
once, at import. So gunicorn's master calls ``prepare_directory`` first thing, before it builds the app (which
imports prometheus_client) and forks the workers from it; prometheus_client gives each process files of its own
(it reads the process id at each write), so a worker never writes to the master's.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ENV = "PROMETHEUS_MULTIPROC_DIR"


def prepare_directory() -> Path:
    """Empty the operator's ``PROMETHEUS_MULTIPROC_DIR``, or make a private one removed when this process exits."""
    if "prometheus_client" in sys.modules:
        raise RuntimeError("the metrics directory must be prepared before prometheus_client is imported")
    given = os.environ.get(ENV)
    if given:
        path = Path(given)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):
            stale.unlink()
        return path
    path = Path(tempfile.mkdtemp(prefix="regional-menus-metrics-"))
    os.environ[ENV] = str(path)
    atexit.register(_remove, path, os.getpid())
    return path


def _remove(path: Path, owner: int) -> None:
    """At exit of the process that made the directory only: forked workers inherit this handler too."""
    if os.getpid() == owner:
        shutil.rmtree(path, ignore_errors=True)


def child_exit(_server: Any, worker: Any) -> None:
    """gunicorn's ``child_exit`` hook, in the master: a worker is gone. Its counters keep counting (its files
    stay, so a restart loses nothing); only gauges of the live processes would be dropped."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]
