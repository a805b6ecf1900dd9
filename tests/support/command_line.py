"""The command line run in this process, as ``python -m service`` runs it: its entry point ``run`` (which turns bad
input into one line on stderr and exit status 2, where click alone would print its own usage error), inside click's
``CliRunner`` isolation (standard input, output and error, and the environment, of this run alone).

A run costs milliseconds where a new interpreter costs half a second of CPU (its imports), and coverage measures
the command's lines. What needs a fresh process (the real entry point, ``serve``) stays in tests/system/ with
``subprocess``. The test chooses the current folder (``monkeypatch.chdir``): the default database is
``./var/regional-menus.sqlite3`` of it. Logging set up by a run is undone after each test
(``service_loggers_restored``, tests/conftest.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from click.testing import CliRunner

from service.cli.commands import run


@dataclass(frozen=True)
class Ran:
    """What a run left: named as ``subprocess.CompletedProcess`` names them, so that a test reads the same."""

    returncode: int
    stdout: str
    stderr: str


def command(*args: str, stdin: str = "", env: Mapping[str, str] | None = None) -> Ran:
    """``regional-menus *args`` with ``stdin`` on standard input and ``env`` added to the environment."""
    with CliRunner().isolation(input=stdin, env=env) as (stdout, stderr, _):
        try:
            run(list(args))
        except SystemExit as exit_:
            code = exit_.code
        else:
            code = 0
    status = 0 if code is None else code if isinstance(code, int) else 1  # sys.exit("text") exits with 1
    return Ran(status, stdout.getvalue().decode(), stderr.getvalue().decode())
