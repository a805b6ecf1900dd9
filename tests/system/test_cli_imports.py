"""What the command line loads: its command tree and every ``--help`` load click and the settings only; SQLAlchemy,
Alembic, Connexion, Jinja and the app are imported by the command that uses them (service/cli/)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("sqlalchemy", "alembic", "connexion", "jinja2", "starlette", "cryptography", "uvicorn", "service.app")

# Runs the command line in process, then prints which of HEAVY it imported on the last line of standard output.
PROBE = """
import json, sys
from service.cli.commands import run
try:
    run(sys.argv[1:])
except SystemExit:
    pass
heavy = {heavy!r}
print(json.dumps(sorted({{h for h in heavy for name in sys.modules if name == h or name.startswith(h + ".")}})))
"""


def imported_by(cwd: Path, *args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("serve", "--help"),
        ("db", "--help"),
        ("db", "upgrade", "--help"),
        ("clients", "create", "--help"),
        ("users", "create", "--help"),
        ("secrets", "--help"),
        ("--version",),
    ],
    ids=" ".join,
)
def test_help_imports_no_database_migration_or_web_framework(tmp_path: Path, args: tuple[str, ...]) -> None:
    assert imported_by(tmp_path, *args) == []


def test_a_command_that_needs_no_database_imports_none(tmp_path: Path) -> None:
    """``secrets new-key`` makes a Fernet key: cryptography, and no SQLAlchemy."""
    assert imported_by(tmp_path, "secrets", "new-key") == ["cryptography"]


def test_a_database_command_imports_sqlalchemy_and_not_the_app(tmp_path: Path) -> None:
    loaded = imported_by(tmp_path, "db", "current", "--database-url", f"sqlite:///{tmp_path / 'state.sqlite3'}")
    assert "sqlalchemy" in loaded
    assert not {"connexion", "jinja2", "service.app"} & set(loaded)


def test_one_worker_loads_neither_gunicorn_nor_the_demo_nor_an_unused_database_dialect(tmp_path: Path) -> None:
    """What ``serve`` without ``--workers`` imports to build the app: gunicorn and its worker class only under
    ``--workers``, the demo's modules only under ``--demo``, Alembic only to migrate, SQLAlchemy's PostgreSQL
    dialect only on PostgreSQL, redis-py only for limits kept in Redis (start-up time and memory)."""
    lazy = ("gunicorn", "uvicorn_worker", "service.cli.demo", "alembic", "sqlalchemy.dialects.postgresql", "redis")
    probe = (
        "import json, sys, service.server.runner, service.app\n"
        f"print(json.dumps(sorted({{h for h in {lazy!r} for n in sys.modules if n == h or n.startswith(h + '.')}})))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
