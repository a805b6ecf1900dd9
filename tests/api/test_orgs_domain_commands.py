"""``orgs claim-domain``, ``domains`` and ``release-domain`` (docs/cli.md), run in process
(tests/support/command_line.py): an operator confirms the email domains an organization claims, once, one
organization each. ``orgs connect``, which needs a provider listening: tests/system/test_orgs_domain_commands.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.command_line import command as cli


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command runs in ``tmp_path``: its default database is ``var/regional-menus.sqlite3`` there."""
    monkeypatch.chdir(tmp_path)


def org(name: str) -> str:
    done = cli("orgs", "create", "--json", "--name", name)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["id"])


def test_a_domain_is_claimed_once_by_one_organization() -> None:
    assert cli("db", "upgrade").returncode == 0
    corp, other = org("Corp"), org("Other")
    claimed = cli("orgs", "claim-domain", "--json", corp, "Corp.Example.")
    assert claimed.returncode == 0, claimed.stderr
    assert json.loads(claimed.stdout)["domain"] == "corp.example"
    assert '"event":"domain_claimed"' in claimed.stderr
    again = cli("orgs", "claim-domain", corp, "corp.example")
    assert again.returncode == 0 and '"event":"domain_claimed"' not in again.stderr  # once: nothing changes
    taken = cli("orgs", "claim-domain", other, "corp.example")
    assert taken.returncode == 2
    assert taken.stderr.strip().splitlines()[-1] == (
        "regional-menus: error: the domain corp.example is claimed by another organization"
    )
    bad = cli("orgs", "claim-domain", corp, "localhost")
    assert bad.returncode == 2 and "corp.example" in bad.stderr  # "a domain name such as corp.example"
    listed = json.loads(cli("orgs", "domains", "--json").stdout)
    assert [(d["domain"], d["org_id"]) for d in listed] == [("corp.example", corp)]
    assert json.loads(cli("orgs", "release-domain", "--json", corp, "corp.example").stdout) == {"released": True}
    assert cli("orgs", "claim-domain", other, "corp.example").returncode == 0
