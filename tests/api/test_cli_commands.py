"""The command line (docs/cli.md), run in process (tests/support/command_line.py): tables with headers or JSON,
one-line errors with exit 2 naming the database, nothing half-written. What needs a process of its own (the real
entry point, ``serve``) is in tests/system/test_cli.py."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy.engine import Engine

from identity.accounts.organizations import OrganizationStore
from identity.api_keys.keys import ApiKeyStore
from identity.clients.registry import ClientStore
from service.cli.commands import main
from service.cli.demo import prepare
from service.console_api.relying_party import SERVICE_ORG_ID, SERVICE_ORG_NAME, SERVICE_ORG_SLUG
from service.database.db import MissingDriver, make_engine
from service.database.schema import head
from service.settings import Settings
from tests.support.command_line import command as cli
from tests.support.defaults import POOL


@pytest.fixture(autouse=True)
def migrated(tmp_path: Path, migrated_sqlite: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command runs in ``tmp_path``, whose default database is at the current schema (as `db upgrade` leaves
    it): a copy of the process's migrated database (tests/conftest.py), a millisecond where migrating takes 0.2 s."""
    (tmp_path / "var").mkdir()
    shutil.copyfile(migrated_sqlite, tmp_path / "var" / "regional-menus.sqlite3")
    monkeypatch.chdir(tmp_path)


def test_api_keys_create_prints_the_key_once_as_json(tmp_path: Path) -> None:
    done = cli("api-keys", "create", "--json", "--name", "partner")
    assert done.returncode == 0, done.stderr
    created = json.loads(done.stdout)
    assert set(created) == {"id", "name", "key"} and created["key"].startswith("rmk_")
    assert (tmp_path / "var" / "regional-menus.sqlite3").exists()
    listed = json.loads(cli("api-keys", "list", "--json").stdout)
    assert [k["id"] for k in listed] == [created["id"]]
    assert created["key"] not in json.dumps(listed)


def test_api_keys_revoke_marks_the_key_revoked() -> None:
    created = json.loads(cli("api-keys", "create", "--json", "--name", "p").stdout)
    revoked = json.loads(cli("api-keys", "revoke", created["id"], "--json").stdout)
    assert revoked["id"] == created["id"] and revoked["revoked_at"]


def test_api_keys_create_with_org_makes_a_key_the_organization_owns() -> None:
    org = json.loads(cli("orgs", "create", "--json", "--name", "Acme").stdout)
    created = json.loads(cli("api-keys", "create", "--json", "--name", "p", "--org", org["id"]).stdout)
    (listed,) = json.loads(cli("api-keys", "list", "--json").stdout)
    assert (listed["id"], listed["org_id"], listed["created_by"]) == (created["id"], org["id"], None)


def test_an_organizations_key_made_and_revoked_on_the_command_line_enters_its_trail_once_by_the_command_line(
    tmp_path: Path,
) -> None:
    org = json.loads(cli("orgs", "create", "--json", "--name", "Acme").stdout)
    created = json.loads(cli("api-keys", "create", "--json", "--name", "p", "--org", org["id"]).stdout)
    for _ in range(2):  # the second finds it revoked already: no second entry
        assert cli("api-keys", "revoke", created["id"]).returncode == 0
    with sqlite3.connect(tmp_path / "var" / "regional-menus.sqlite3") as database:
        trail = database.execute(
            "SELECT kind, actor_kind, actor_id, subject, details FROM organization_events WHERE org_id = ? ORDER BY at",
            (org["id"],),
        ).fetchall()
    assert trail == [
        ("api_key_created", "command_line", None, created["id"], '{"name": "p"}'),
        ("api_key_revoked", "command_line", None, created["id"], '{"name": "p"}'),
    ]


def test_api_keys_create_for_an_unknown_organization_fails_and_writes_nothing() -> None:
    done = cli("api-keys", "create", "--name", "p", "--org", "org_missing")
    assert done.returncode == 2 and "no organization has the id 'org_missing'" in done.stderr
    assert json.loads(cli("api-keys", "list", "--json").stdout) == []


def test_api_keys_create_refuses_a_key_past_the_organizations_cap() -> None:
    org = json.loads(cli("orgs", "create", "--json", "--name", "Acme").stdout)
    cap = {"MENUS_MAX_KEYS_PER_ORG": "2"}
    for name in ("one", "two"):
        assert cli("api-keys", "create", "--name", name, "--org", org["id"], env=cap).returncode == 0
    done = cli("api-keys", "create", "--name", "three", "--org", org["id"], env=cap)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "regional-menus: error: Acme has 2 active API keys, the most an organization may have: "
        "revoke one before creating another"
    )
    assert len(json.loads(cli("api-keys", "list", "--json").stdout)) == 2


def test_database_url_option_chooses_the_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'other.sqlite3'}"
    assert cli("db", "upgrade", "--database-url", url).returncode == 0
    assert cli("api-keys", "create", "--name", "p", "--database-url", url).returncode == 0
    listed = json.loads(cli("api-keys", "list", "--json", "--database-url", url).stdout)
    assert [key["name"] for key in listed] == ["p"]
    assert json.loads(cli("api-keys", "list", "--json").stdout) == []  # not the default database


def test_db_upgrade_brings_an_empty_database_to_the_head_and_then_has_nothing_to_do(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.sqlite3'}"
    first = json.loads(cli("db", "upgrade", "--json", "--database-url", url).stdout)
    assert first == {"from": None, "to": head()}
    again = json.loads(cli("db", "upgrade", "--json", "--database-url", url).stdout)
    assert again == {"from": head(), "to": head()}
    state = json.loads(cli("db", "current", "--json", "--database-url", url).stdout)
    assert state == {"revision": head(), "head": head(), "current": True}


@pytest.mark.parametrize(
    "command",
    [("api-keys", "list"), ("orgs", "list")],  # serve's: tests/system/test_cli.py
)
def test_commands_refuse_a_database_without_the_schema_and_name_the_upgrade_command(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    sqlite3.connect(tmp_path / "empty.sqlite3").close()  # a database file without the schema
    url = f"sqlite:///{tmp_path / 'empty.sqlite3'}"
    done = cli(*command, "--database-url", url)
    assert done.returncode == 2
    assert done.stderr == (
        f"regional-menus: error: {tmp_path / 'empty.sqlite3'}: the database has no schema yet: "
        "run `regional-menus db upgrade`\n"
    )


def test_the_default_database_is_var_of_the_current_folder_named_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    done = cli("api-keys", "list")
    assert done.returncode == 2
    assert done.stderr.startswith(f"regional-menus: error: {elsewhere / 'var' / 'regional-menus.sqlite3'}: ")


def test_a_relative_sqlite_url_is_named_by_its_absolute_path(tmp_path: Path) -> None:
    done = cli("orgs", "list", "--database-url", "sqlite:///relative.sqlite3")
    assert done.returncode == 2 and f"{tmp_path / 'relative.sqlite3'}: there is no database here yet" in done.stderr


def test_an_unreachable_database_is_one_line_naming_it_without_its_password() -> None:
    url = "postgresql+psycopg://menus:s3cret@127.0.0.1:1/menus"  # nothing listens on port 1
    done = cli("api-keys", "list", "--database-url", url)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "postgresql+psycopg://menus:***@127.0.0.1:1/menus: the database cannot be used:" in done.stderr
    assert "s3cret" not in done.stderr


def test_a_postgresql_url_without_psycopg_names_the_extra_to_install() -> None:
    def installed(module: str) -> bool:
        return module != "psycopg"  # as in an install without the postgres extra

    with pytest.raises(MissingDriver, match=r"pip install 'regional-menus\[postgres\]'"):
        make_engine("postgresql+psycopg://menus@127.0.0.1/menus", POOL, installed=installed)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("api-keys", "create", "--json"), "Missing option '--name'."),
        (("api-keys", "revoke", "key_unknown", "--json"), "no API key has the id 'key_unknown'"),
        (("orgs", "create", "--name", " ", "--json"), None),
    ],
)
def test_json_errors_are_one_json_object_on_stderr_with_exit_2(args: tuple[str, ...], message: str | None) -> None:
    done = cli(*args)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
    error = json.loads(done.stderr)
    assert set(error) == {"error"} and error["error"]
    assert message is None or error["error"] == message


def test_text_output_is_a_table_with_a_header_line() -> None:
    assert cli("api-keys", "list").stdout.split() == ["ID", "NAME", "STATE"]
    created_key = json.loads(cli("api-keys", "create", "--json", "--name", "partner").stdout)
    header, row = cli("api-keys", "list").stdout.splitlines()
    assert header.split() == ["ID", "NAME", "STATE"] and row.split() == [created_key["id"], "partner", "active"]
    assert row.index("partner") == header.index("NAME")  # aligned under its heading
    header, row = cli("orgs", "create", "--name", "Acme Foods").stdout.splitlines()
    assert header.split() == ["ID", "SLUG", "NAME"] and row.split()[1:] == ["acme-foods", "Acme", "Foods"]


def test_demo_keeps_its_organization_user_and_client_id_and_renews_only_key_and_secret(engine: Engine) -> None:
    settings = Settings(database_url=str(engine.url))
    first, second = prepare(engine, settings), prepare(engine, settings)
    assert (second.org_id, second.user_id, second.client_id) == (first.org_id, first.user_id, first.client_id)
    assert second.api_key != first.api_key and second.client_secret != first.client_secret
    assert second.api_key in second.instructions and second.client_secret in second.instructions
    keys = ApiKeyStore(engine)
    assert keys.authenticate(first.api_key) is None and keys.authenticate(second.api_key) is not None
    client = ClientStore(engine).get(second.client_id)
    assert client is not None and client.verify_secret(second.client_secret)
    assert not client.verify_secret(first.client_secret)
    assert second.service_client_id == first.service_client_id
    service = ClientStore(engine).get(second.service_client_id)
    assert service is not None and service.verify_secret(second.service_client_secret)
    assert service.grants == ("client_credentials",) and service.scopes == ("members:read",)
    assert second.service_client_secret in second.instructions
    assert sorted(c.id for c in ClientStore(engine).list()) == sorted([second.client_id, second.service_client_id])


@pytest.mark.parametrize(
    "args",
    [
        ("api-keys", "create", "--name", ""),
        ("api-keys", "create"),
        ("api-keys", "revoke", "key_unknown"),
        ("api-keys", "frobnicate"),
        ("serve", "--port", "99999"),
        ("serve", "--workers", "0"),
        ("serve", "--workers", "many"),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_2(args: tuple[str, ...]) -> None:
    done = cli(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("regional-menus: error:")


def test_failed_create_writes_nothing() -> None:
    cli("api-keys", "create", "--name", "ok")
    cli("api-keys", "create", "--name", " ")
    assert len(json.loads(cli("api-keys", "list", "--json").stdout)) == 1


def created(*args: str, stdin: str = "") -> dict:
    done = cli(*args, "--json", stdin=stdin)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_orgs_users_and_clients_are_created_and_listed() -> None:
    org = created("orgs", "create", "--name", "Acme Foods")
    assert org["slug"] == "acme-foods"
    user = created(
        "users", "create", "--email", "ana@example.com", "--name", "Ana",
        "--password-stdin", "--org", org["id"], "--role", "owner", stdin="correct horse battery\n",
    )  # fmt: skip
    assert user["orgs"] == [{"id": org["id"], "name": "Acme Foods", "role": "owner"}]
    client = created(
        "clients", "create", "--name", "Web", "--org", org["id"],
        "--redirect-uri", "https://app.example/cb", "--redirect-uri", "https://app.example/cb2",
        "--post-logout-redirect-uri", "https://app.example/bye", "--auth-method", "client_secret_basic",
        "--first-party",
    )  # fmt: skip
    assert client["client_secret"].startswith("cs_") and client["redirect_uris"][1] == "https://app.example/cb2"
    listed = json.loads(cli("clients", "list", "--json").stdout)
    assert [c["client_id"] for c in listed] == [client["client_id"]] and "client_secret" not in listed[0]
    assert [u["email"] for u in json.loads(cli("users", "list", "--json").stdout)] == ["ana@example.com"]
    assert cli("clients", "delete", client["client_id"]).returncode == 0
    assert json.loads(cli("clients", "list", "--json").stdout) == []


def test_public_client_is_created_listed_and_updated_with_its_web_origins_under_one_id() -> None:
    org = created("orgs", "create", "--name", "Acme")
    spa = created(
        "clients", "create", "--name", "SPA", "--org", org["id"], "--auth-method", "none",
        "--redirect-uri", "https://spa.example/cb", "--web-origin", "https://spa.example",
        "--web-origin", "http://127.0.0.1:5173",
    )  # fmt: skip
    assert "client_secret" not in spa and spa["pkce"] == "required"
    assert spa["token_endpoint_auth_method"] == "none"
    assert spa["web_origins"] == ["https://spa.example", "http://127.0.0.1:5173"]
    text = cli("clients", "list").stdout
    assert "WEB ORIGINS" in text and "https://spa.example http://127.0.0.1:5173" in text and " none " in text
    updated = created(
        "clients", "update", spa["client_id"], "--web-origin", "https://app.example",
        "--redirect-uri", "https://app.example/cb",
    )  # fmt: skip
    assert updated["client_id"] == spa["client_id"] and updated["web_origins"] == ["https://app.example"]
    listed = json.loads(cli("clients", "list", "--json").stdout)
    assert listed[0]["redirect_uris"] == ["https://app.example/cb"] and listed[0]["web_origins"] == [
        "https://app.example"
    ]
    cleared = created("clients", "update", spa["client_id"], "--no-web-origins")
    assert cleared["web_origins"] == [] and cleared["redirect_uris"] == ["https://app.example/cb"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--auth-method", "none", "--pkce", "optional"), "must use PKCE"),
        (("--auth-method", "none", "--web-origin", "https://spa.example/cb"), "not a URL"),
        (("--auth-method", "client_secret_basic", "--web-origin", "https://spa.example"), "only for public clients"),
    ],
)
def test_public_client_registration_refuses_bad_input_in_one_line(args: tuple[str, ...], message: str) -> None:
    org = created("orgs", "create", "--name", "Acme")
    done = cli("clients", "create", "--name", "SPA", "--org", org["id"], "--redirect-uri",
               "https://spa.example/cb", *args)  # fmt: skip
    assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1
    assert json.loads(cli("clients", "list", "--json").stdout) == []
    unknown = cli("clients", "update", "cli_missing", "--web-origin", "https://spa.example")
    assert unknown.returncode == 2 and "no client has the id" in unknown.stderr


def test_application_client_needs_no_redirect_uri() -> None:
    org = created("orgs", "create", "--name", "Acme")
    client = created(
        "clients", "create", "--name", "Reporter", "--org", org["id"],
        "--auth-method", "client_secret_post", "--grant", "client_credentials", "--scope", "members:read",
    )  # fmt: skip
    assert client["grant_types"] == ["client_credentials"] and client["scopes"] == ["members:read"]


def test_keys_rotate_and_list() -> None:
    first = created("keys", "rotate")
    assert first["state"] == "signing"
    second = created("keys", "rotate")
    assert second["state"] == "published"
    states = {k["kid"]: k["state"] for k in json.loads(cli("keys", "list", "--json").stdout)}
    assert states == {first["kid"]: "signing", second["kid"]: "published"}


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (
            ("users", "create", "--email", "a@b.example", "--name", "A", "--password-stdin", "--org", "org_x"),
            "pw12345678\n",
        ),
        (("users", "create", "--email", "not-an-email", "--name", "A", "--password-stdin", "--org", "org_x"), "x\n"),
        (("clients", "create", "--name", "W", "--org", "org_x", "--auth-method", "client_secret_basic"), ""),
        (("clients", "create", "--name", "W", "--org", "org_x", "--auth-method", "magic"), ""),
        (("clients", "delete", "cli_missing"), ""),
        (("orgs", "create", "--name", " "), ""),
        (("orgs", "create", "--name", "Acme\u202eFoods"), ""),  # a bidirectional override spoofs a name
        (("api-keys", "create", "--name", "prod\u200b"), ""),
        (("clients", "create", "--name", "W\x1b[31m", "--org", "org_x", "--auth-method", "client_secret_basic"), ""),
    ],
)
def test_identity_commands_refuse_bad_input_with_exit_2(args: tuple[str, ...], stdin: str) -> None:
    done = cli(*args, stdin=stdin)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_command_run_where_there_is_no_database_fails_and_leaves_no_file_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/cli.md: nothing half-written. Only ``db upgrade`` (and ``serve --demo``) makes a database; any other
    command, run from a folder without one, says so and leaves no 4 KiB ``var/regional-menus.sqlite3`` (``serve``'s
    run: tests/system/test_cli.py)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for command in [("orgs", "list"), ("api-keys", "revoke", "key_0000000000000000"), ("db", "current")]:
        done = cli(*command)
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, (command, done.stderr)
        assert "there is no database here yet: `regional-menus db upgrade` creates it" in done.stderr, command
        assert list(elsewhere.iterdir()) == [], command
    assert cli("db", "upgrade").returncode == 0
    assert (elsewhere / "var" / "regional-menus.sqlite3").is_file()


def test_a_missing_options_choices_are_listed_on_one_line_without_tabs() -> None:
    done = cli("clients", "create", "--name", "App", "--org", "org_x")
    assert done.returncode == 2 and "\t" not in done.stderr and len(done.stderr.splitlines()) == 1
    assert done.stderr == (
        "regional-menus: error: Missing option '--auth-method'. "
        "Choose from: client_secret_basic, client_secret_post, private_key_jwt, none\n"
    )


def test_every_commands_summary_is_whole_in_an_80_column_terminal() -> None:
    """click cuts a summary that does not fit the listing with "..."; every command and group gives one that does."""
    groups: list[tuple[str, ...]] = [()] + [(name,) for name, command in main.commands.items() if command.params == []]
    cut = []
    for group in groups:
        listing = CliRunner().invoke(main, [*group, "--help"], terminal_width=80, prog_name="regional-menus")
        assert listing.exit_code == 0, listing.output
        listed = listing.output.split("Commands:\n", 1)[1].splitlines()
        cut += [f"{' '.join(group)}: {line.strip()}" for line in listed if line.endswith("...")]
    assert cut == []


def test_a_public_client_made_where_public_clients_are_off_is_registered_with_a_warning() -> None:
    org = json.loads(cli("orgs", "create", "--json", "--name", "Acme").stdout)
    args = ("clients", "create", "--name", "SPA", "--org", org["id"], "--auth-method", "none")
    args += ("--redirect-uri", "https://spa.example/callback")
    done = cli(*args, env={"MENUS_PUBLIC_CLIENTS": "off"})
    assert done.returncode == 0 and "SPA" in done.stdout
    assert (
        "regional-menus: warning: MENUS_PUBLIC_CLIENTS is off here: a node with it off refuses this public client"
        in done.stderr
    )
    as_json = cli(*args, "--json", env={"MENUS_PUBLIC_CLIENTS": "off"})
    warning = next(json.loads(line) for line in as_json.stderr.splitlines() if '"warning"' in line)
    assert warning["warning"].startswith("MENUS_PUBLIC_CLIENTS is off here")
    quiet = cli(*args, env={"MENUS_PUBLIC_CLIENTS": "on"})
    assert quiet.returncode == 0 and "warning" not in quiet.stderr
    assert len(json.loads(cli("clients", "list", "--json").stdout)) == 3


def test_orgs_list_leaves_out_the_services_own_organization(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'var' / 'regional-menus.sqlite3'}", POOL)
    OrganizationStore(engine).ensure(SERVICE_ORG_ID, SERVICE_ORG_NAME, SERVICE_ORG_SLUG)  # as the console's start
    engine.dispose()
    cli("orgs", "create", "--name", "Acme")
    listed = json.loads(cli("orgs", "list", "--json").stdout)
    assert [org["name"] for org in listed] == ["Acme"]
    assert SERVICE_ORG_SLUG not in cli("orgs", "list").stdout


def test_revoking_a_revoked_key_exits_0_says_already_revoked_and_writes_no_second_audit_line() -> None:
    created = json.loads(cli("api-keys", "create", "--json", "--name", "p").stdout)
    first = cli("api-keys", "revoke", created["id"], "--json")
    assert first.returncode == 0 and json.loads(first.stdout)["already_revoked"] is False
    assert '"api_key_revoked"' in first.stderr
    again = cli("api-keys", "revoke", created["id"])
    assert again.returncode == 0 and "already revoked" in again.stdout
    assert again.stderr == ""  # no second audit line
    as_json = json.loads(cli("api-keys", "revoke", created["id"], "--json").stdout)
    assert as_json["already_revoked"] is True and as_json["revoked_at"] == json.loads(first.stdout)["revoked_at"]
