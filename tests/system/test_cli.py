"""The command line as a process of its own (docs/cli.md): ``python -m service`` answers as the in-process runs of
tests/api/test_cli_commands.py do, and ``serve`` (which pauses the garbage collector and sets up the server's
logging, once per process) checks its port and its database before it touches anything."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from service.database.schema import head
from tests.support.command_line import command


def cli(cwd: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_python_m_service_answers_in_json_and_refuses_bad_input_in_one_line_with_exit_2(
    tmp_path: Path, migrated_sqlite: Path
) -> None:
    """The real entry point (service/__main__.py): what the in-process runs check holds for the process too."""
    (tmp_path / "var").mkdir()
    shutil.copyfile(migrated_sqlite, tmp_path / "var" / "regional-menus.sqlite3")
    done = cli(tmp_path, "api-keys", "create", "--json", "--name", "partner")
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)) == {"id", "name", "key"}
    refused = cli(tmp_path, "api-keys", "revoke", "key_unknown", "--json")
    assert refused.returncode == 2 and refused.stdout == "" and len(refused.stderr.splitlines()) == 1
    assert json.loads(refused.stderr) == {"error": "no API key has the id 'key_unknown'"}


@pytest.mark.parametrize("command_line", [("serve", "--port", "0"), ("serve", "--port", "0", "--workers", "2")])
def test_serve_refuses_a_database_without_the_schema_and_names_the_upgrade_command(
    tmp_path: Path, command_line: tuple[str, ...]
) -> None:
    sqlite3.connect(tmp_path / "empty.sqlite3").close()  # a database file without the schema
    url = f"sqlite:///{tmp_path / 'empty.sqlite3'}"
    done = cli(tmp_path, *command_line, "--database-url", url)
    assert done.returncode == 2
    assert done.stderr == (
        f"regional-menus: error: {tmp_path / 'empty.sqlite3'}: the database has no schema yet: "
        "run `regional-menus db upgrade`\n"
    )


def test_serve_on_a_busy_port_fails_before_touching_any_data(tmp_path: Path) -> None:
    """A second ``serve --demo`` must not replace the running demo's key and secret, nor make a database."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = cli(fresh, "serve", "--demo", "--port", str(port))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"regional-menus: error: cannot listen on 127.0.0.1:{port}: ")
    assert "nothing was changed" in done.stderr and len(done.stderr.splitlines()) == 1
    assert list(fresh.iterdir()) == []  # no var/, no database


def test_serve_refuses_a_schema_behind_this_version_and_names_the_upgrade_command(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    assert command("db", "upgrade", "--database-url", url).returncode == 0
    with sqlite3.connect(tmp_path / "old.sqlite3") as connection:  # as if written by an older version
        connection.execute("UPDATE alembic_version SET version_num = 'older'")
    done = cli(tmp_path, "serve", "--port", "0", "--database-url", url)
    assert done.returncode == 2
    assert f"the database schema is at revision older, this version needs {head()}" in done.stderr
    assert "run `regional-menus db upgrade`" in done.stderr
    current = json.loads(command("db", "current", "--json", "--database-url", url).stdout)
    assert current["current"] is False


def test_serve_run_where_there_is_no_database_fails_and_leaves_no_file_behind(tmp_path: Path) -> None:
    """docs/cli.md: nothing half-written. Only ``serve --demo`` and ``db upgrade`` make a database; ``serve``, run
    from a folder without one, says so and leaves no 4 KiB ``var/regional-menus.sqlite3`` (the other commands':
    tests/api/test_cli_commands.py)."""
    done = cli(tmp_path, "serve", "--port", "0")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "there is no database here yet: `regional-menus db upgrade` creates it" in done.stderr
    assert list(tmp_path.iterdir()) == []
