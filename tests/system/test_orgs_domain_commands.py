"""``orgs claim-domain``, ``domains``, ``release-domain`` and ``connect`` (docs/cli.md): an operator confirms the
email domains an organization claims, once, one organization each, and registers its own provider."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.upstream import upstream_provider


def cli(cwd: Path, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def org(cwd: Path, name: str) -> str:
    done = cli(cwd, "orgs", "create", "--json", "--name", name)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["id"])


def test_a_domain_is_claimed_once_by_one_organization(tmp_path: Path) -> None:
    assert cli(tmp_path, "db", "upgrade").returncode == 0
    corp, other = org(tmp_path, "Corp"), org(tmp_path, "Other")
    claimed = cli(tmp_path, "orgs", "claim-domain", "--json", corp, "Corp.Example.")
    assert claimed.returncode == 0, claimed.stderr
    assert json.loads(claimed.stdout)["domain"] == "corp.example"
    assert '"event":"domain_claimed"' in claimed.stderr
    again = cli(tmp_path, "orgs", "claim-domain", corp, "corp.example")
    assert again.returncode == 0 and '"event":"domain_claimed"' not in again.stderr  # once: nothing changes
    taken = cli(tmp_path, "orgs", "claim-domain", other, "corp.example")
    assert taken.returncode == 2
    assert taken.stderr.strip().splitlines()[-1] == (
        "regional-menus: error: the domain corp.example is claimed by another organization"
    )
    bad = cli(tmp_path, "orgs", "claim-domain", corp, "localhost")
    assert bad.returncode == 2 and "corp.example" in bad.stderr  # "a domain name such as corp.example"
    listed = json.loads(cli(tmp_path, "orgs", "domains", "--json").stdout)
    assert [(d["domain"], d["org_id"]) for d in listed] == [("corp.example", corp)]
    assert json.loads(cli(tmp_path, "orgs", "release-domain", "--json", corp, "corp.example").stdout) == {
        "released": True
    }
    assert cli(tmp_path, "orgs", "claim-domain", other, "corp.example").returncode == 0


def test_connect_checks_the_providers_discovery_and_seals_the_secret(tmp_path: Path) -> None:
    assert cli(tmp_path, "db", "upgrade").returncode == 0
    corp = org(tmp_path, "Corp")
    with upstream_provider(tmp_path) as upstream:
        refused = cli(tmp_path, "orgs", "connect", corp, "--issuer", upstream.issuer, "--client-id", "c",
                      "--client-secret-stdin", stdin="s3cret\n")  # fmt: skip
        assert refused.returncode == 2 and "the issuer must use https" in refused.stderr  # loopback not allowed
        unclaimed = cli(tmp_path, "orgs", "connect", corp, "--issuer", upstream.issuer, "--client-id", "c",
                        "--client-secret-stdin", "--domain", "elsewhere.example", stdin="s3cret\n",
                        MENUS_OUTBOUND_LOOPBACK="on")  # fmt: skip
        assert unclaimed.returncode == 2 and "is not a domain the organization claims" in unclaimed.stderr
        done = cli(tmp_path, "orgs", "connect", "--json", corp, "--issuer", upstream.issuer, "--client-id", "c",
                   "--client-secret-stdin", stdin="s3cret\n", MENUS_OUTBOUND_LOOPBACK="on")  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert '"reason":"connection_created"' in done.stderr  # an entry of Corp's trail, by the command line
    shown = json.loads(done.stdout)
    assert shown["redirect_uri"].endswith(f"/federation/{corp}/callback")
    assert shown["provider"]["token_endpoint"] == f"{upstream.issuer}/token"
    assert "s3cret" not in done.stdout
    database = (tmp_path / "var" / "regional-menus.sqlite3").read_bytes()
    assert b"s3cret" not in database  # sealed at rest
