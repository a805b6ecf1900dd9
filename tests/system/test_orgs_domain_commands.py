"""``orgs connect`` (docs/cli.md): an operator registers an organization's own provider, whose discovery the command
checks (a provider listening: hence tests/system/); the command runs in process (tests/support/command_line.py).
The domain commands: tests/api/test_orgs_domain_commands.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.command_line import command as cli
from tests.support.upstream import upstream_provider


def org(name: str) -> str:
    done = cli("orgs", "create", "--json", "--name", name)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["id"])


def test_connect_checks_the_providers_discovery_and_seals_the_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli("db", "upgrade").returncode == 0
    corp = org("Corp")
    with upstream_provider(tmp_path) as upstream:
        refused = cli("orgs", "connect", corp, "--issuer", upstream.issuer, "--client-id", "c",
                      "--client-secret-stdin", stdin="s3cret\n")  # fmt: skip
        assert refused.returncode == 2 and "the issuer must use https" in refused.stderr  # loopback not allowed
        unclaimed = cli("orgs", "connect", corp, "--issuer", upstream.issuer, "--client-id", "c",
                        "--client-secret-stdin", "--domain", "elsewhere.example", stdin="s3cret\n",
                        env={"MENUS_OUTBOUND_LOOPBACK": "on"})  # fmt: skip
        assert unclaimed.returncode == 2 and "is not a domain the organization claims" in unclaimed.stderr
        done = cli("orgs", "connect", "--json", corp, "--issuer", upstream.issuer, "--client-id", "c",
                   "--client-secret-stdin", stdin="s3cret\n", env={"MENUS_OUTBOUND_LOOPBACK": "on"})  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert '"reason":"connection_created"' in done.stderr  # an entry of Corp's trail, by the command line
    shown = json.loads(done.stdout)
    assert shown["redirect_uri"].endswith(f"/federation/{corp}/callback")
    assert shown["provider"]["token_endpoint"] == f"{upstream.issuer}/token"
    assert "s3cret" not in done.stdout
    database = (tmp_path / "var" / "regional-menus.sqlite3").read_bytes()
    assert b"s3cret" not in database  # sealed at rest
