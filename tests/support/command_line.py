"""The command line run in this process, as ``python -m service`` runs it: its entry point ``run`` (which turns bad
input into one line on stderr and exit status 2, where click alone would print its own usage error), inside click's
``CliRunner`` isolation (standard input, output and error, and the environment, of this run alone).

A run costs milliseconds where a new interpreter costs half a second of CPU (its imports), and coverage measures
the command's lines. What needs a fresh process (the real entry point, ``serve``) stays in tests/system/ with
``subprocess``. The test chooses the current folder (``monkeypatch.chdir``): the default database is
``./var/regional-menus.sqlite3`` of it. The logging a run sets up (its audit lines to its standard error) is undone
as it ends (``service_loggers_kept``), so that a run from a module's fixture leaves the worker's loggers as it found
them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from click.testing import CliRunner

from service.cli.commands import run
from service.ops.logs import SERVICE_LOGGERS


@dataclass(frozen=True)
class Ran:
    """What a run left: named as ``subprocess.CompletedProcess`` names them, so that a test reads the same."""

    returncode: int
    stdout: str
    stderr: str


@contextmanager
def service_loggers_kept() -> Iterator[None]:
    """The service's loggers (their handlers, level and propagation) as they were before, once the block ends: a
    command sends the audit logger to its own standard error and stops its propagation
    (``service.ops.logs.configure_command``), and a later test on the same worker must still see its records."""
    loggers = [logging.getLogger(name) for name in SERVICE_LOGGERS]
    found = [(logger.handlers[:], logger.level, logger.propagate) for logger in loggers]
    try:
        yield
    finally:
        for logger, (handlers, level, propagate) in zip(loggers, found, strict=True):
            logger.handlers[:] = handlers
            logger.setLevel(level)
            logger.propagate = propagate


def command(*args: str, stdin: str = "", env: Mapping[str, str] | None = None) -> Ran:
    """``regional-menus *args`` with ``stdin`` on standard input and ``env`` added to the environment."""
    with service_loggers_kept(), CliRunner().isolation(input=stdin, env=env) as (stdout, stderr, _):
        try:
            run(list(args))
        except SystemExit as exit_:
            code = exit_.code
        else:
            code = 0
    status = 0 if code is None else code if isinstance(code, int) else 1  # sys.exit("text") exits with 1
    return Ran(status, stdout.getvalue().decode(), stderr.getvalue().decode())
