"""The command line (DESIGN §4): JSON output, one-line errors with exit 2, nothing half-written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def cli(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service", *args], cwd=cwd, input=stdin, capture_output=True, text=True, timeout=60
    )


def test_api_keys_create_prints_the_key_once_as_json(tmp_path: Path) -> None:
    done = cli(tmp_path, "api-keys", "create", "--json", "--name", "partner")
    assert done.returncode == 0, done.stderr
    created = json.loads(done.stdout)
    assert set(created) == {"id", "name", "key"} and created["key"].startswith("rmk_")
    assert (tmp_path / "var" / "regional-menus.sqlite3").exists()
    listed = json.loads(cli(tmp_path, "api-keys", "list", "--json").stdout)
    assert [k["id"] for k in listed] == [created["id"]]
    assert created["key"] not in json.dumps(listed)


def test_api_keys_revoke_marks_the_key_revoked(tmp_path: Path) -> None:
    created = json.loads(cli(tmp_path, "api-keys", "create", "--json", "--name", "p").stdout)
    revoked = json.loads(cli(tmp_path, "api-keys", "revoke", created["id"], "--json").stdout)
    assert revoked["id"] == created["id"] and revoked["revoked_at"]


def test_database_url_option_chooses_the_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'other.sqlite3'}"
    assert cli(tmp_path, "api-keys", "create", "--name", "p", "--database-url", url).returncode == 0
    assert (tmp_path / "other.sqlite3").exists() and not (tmp_path / "var").exists()


@pytest.mark.parametrize(
    "args",
    [
        ("api-keys", "create", "--name", ""),
        ("api-keys", "create"),
        ("api-keys", "revoke", "key_unknown"),
        ("api-keys", "frobnicate"),
        ("serve", "--port", "99999"),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_2(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = cli(tmp_path, *args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("regional-menus: error:")


def test_failed_create_writes_nothing(tmp_path: Path) -> None:
    cli(tmp_path, "api-keys", "create", "--name", "ok")
    cli(tmp_path, "api-keys", "create", "--name", " ")
    assert len(json.loads(cli(tmp_path, "api-keys", "list", "--json").stdout)) == 1
