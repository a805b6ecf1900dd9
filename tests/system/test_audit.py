"""The audit lines of the command line, from ``python -m service`` run as operators run it: one JSON line per event
on standard error, the command's answer alone on standard output, never a secret. The events of the app's actions,
in process, are tests/api/test_audit.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from identity.keys.sealing import new_key


def test_secrets_rotation_is_audited(tmp_path: Path) -> None:
    env = {**os.environ, "MENUS_SECRET_KEYS": new_key()}
    for args in (["db", "upgrade"], ["keys", "rotate"], ["secrets", "rotate", "--json"]):
        done = subprocess.run(
            [sys.executable, "-m", "service", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stderr.splitlines()]
    assert [(e["event"], e["outcome"], e["source"]) for e in events] == [("secrets_rotated", "success", "cli")]
    assert env["MENUS_SECRET_KEYS"] not in done.stderr


def test_commands_write_their_audit_lines_to_standard_error_as_json(tmp_path: Path) -> None:
    def command(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "service", *args], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done

    command("db", "upgrade")
    created = command("api-keys", "create", "--name", "ci", "--json")
    key = json.loads(created.stdout)  # standard output stays the command's answer
    revoked = command("api-keys", "revoke", key["id"])
    rotated = command("keys", "rotate")
    lines = [json.loads(line) for done in (created, revoked, rotated) for line in done.stderr.splitlines()]
    assert [(line["event"], line["source"], line["logger"]) for line in lines] == [
        ("api_key_created", "cli", "regional_menus.audit"),
        ("api_key_revoked", "cli", "regional_menus.audit"),
        ("key_rotated", "cli", "regional_menus.audit"),
    ]
    assert key["key"] not in created.stderr
