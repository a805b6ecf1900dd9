"""A ``MENUS_*`` variable that cannot be used: one line on standard error naming it, exit status 2, no traceback,
for ``serve`` and for every command that opens the database (service/settings/grammars.py ``ConfigurationError``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.database.db import make_engine
from service.database.schema import upgrade
from tests.support.defaults import POOL
from tests.support.live import free_port

SECRET = "not-a-key-at-all-but-maybe-a-password"
GOOD_KEY = "Oz4d6kKaQ2wQbM4Zx1dYb8rJ6bC0X1nN5Yk8l2fH3aE="  # 32 bytes of URL-safe base64, a key that is never used


def command(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    environment = {name: value for name, value in os.environ.items() if not name.startswith("MENUS_")}
    return subprocess.run(
        [sys.executable, "-m", "service", *args],
        cwd=cwd,
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture(autouse=True)
def migrated(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'var' / 'regional-menus.sqlite3'}", POOL)
    upgrade(engine)
    engine.dispose()


def assert_one_line_naming(done: subprocess.CompletedProcess[str], variable: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("regional-menus: error:"), done.stderr
    assert variable in lines[0] and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("MENUS_SECRET_KEYS", SECRET),
        ("MENUS_SECRET_KEYS", f"{GOOD_KEY},{SECRET}"),
        ("MENUS_RATE_LIMIT", "ten"),
        ("MENUS_RATE_LIMIT_STORAGE", "memcached://x"),
        ("MENUS_TRUSTED_PROXIES", "proxy.example"),
        ("MENUS_HEAD_TIMEOUT", "0"),
        ("MENUS_ISSUER", "ftp://id.example"),
        ("MENUS_BASE_URL", "http://[::1/menus"),
        ("MENUS_BASE_URL", "http://127.0.0.1:99999"),
        ("MENUS_CORS_ORIGINS", "menus.example"),
        ("MENUS_DOCS", "maybe"),
        ("MENUS_CONSOLE_PATH", "console/"),
        ("MENUS_SESSION_TTL", "-1"),
    ],
)
def test_serve_with_a_malformed_variable_says_which_in_one_line_and_exits_2(
    tmp_path: Path, variable: str, value: str
) -> None:
    done = command(tmp_path, {variable: value}, "serve", "--port", str(free_port()))
    assert_one_line_naming(done, variable)
    assert SECRET not in done.stderr  # a secret key is never repeated, even a wrong one


@pytest.mark.parametrize(
    "args",
    [
        ("orgs", "list"),
        ("api-keys", "create", "--name", "ci"),
        ("keys", "rotate"),
        ("secrets", "rotate"),
        ("db", "upgrade"),
        ("db", "purge", "--json"),
    ],
)
def test_every_command_with_a_malformed_secret_key_says_so_in_one_line_and_exits_2(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    done = command(tmp_path, {"MENUS_SECRET_KEYS": SECRET}, *args)
    if "--json" in args:
        assert done.returncode == 2 and "MENUS_SECRET_KEYS" in done.stderr and len(done.stderr.splitlines()) == 1
    else:
        assert_one_line_naming(done, "MENUS_SECRET_KEYS")
    assert SECRET not in done.stderr


def test_a_new_secret_key_can_be_made_while_the_variable_is_malformed(tmp_path: Path) -> None:
    done = command(tmp_path, {"MENUS_SECRET_KEYS": SECRET}, "secrets", "new-key")
    assert done.returncode == 0 and len(done.stdout.strip()) == 44
