import re
from dataclasses import fields
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog
from identity.accounts.users import User
from service.settings import (
    ConfigurationError,
    Settings,
    SmtpServer,
    default_database_url,
    max_keys_per_org_from,
    outbound_loopback_from,
    secret_keys_from,
)
from service.settings.grammars import WholeNumber
from service.settings.rows import Entry, rows
from tests.support.apps import make_app
from tests.support.identity_fixtures import Registered
from tests.support.identity_pages import assert_error_page, authorize, sign_in, to_page
from tests.support.loops import each
from tools.settings_doc import OPERATIONS_MD, regenerated


def test_defaults_point_at_loopback_on_the_chosen_port() -> None:
    settings = Settings.from_env({}, port=9000)
    assert settings.base_url == settings.issuer == "http://127.0.0.1:9000"
    assert settings.database_url == default_database_url() and settings.rate_limit_per_minute == 600


def test_the_default_database_is_var_of_the_current_folder_as_an_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    expected = f"sqlite:///{tmp_path / 'var' / 'regional-menus.sqlite3'}"
    assert Settings.from_env({}).database_url == Settings().database_url == expected


def test_environment_overrides_and_issuer_may_carry_a_path() -> None:
    settings = Settings.from_env(
        {"MENUS_ISSUER": "https://id.example.com/tenant-a/", "MENUS_RATE_LIMIT": "60", "MENUS_KEY_PUBLISH_DELAY": "0"}
    )
    assert settings.issuer == "https://id.example.com/tenant-a"
    assert (settings.rate_limit_per_minute, settings.key_publish_delay) == (60, 0)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MENUS_RATE_LIMIT", "0"),
        ("MENUS_RATE_LIMIT", "ten"),
        ("MENUS_ACCESS_TOKEN_TTL", "-5"),
        ("MENUS_RATE_LIMIT", "٣"),
    ],
)
def test_bad_numeric_setting_is_refused_by_name(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=name):
        Settings.from_env({name: value})


# The table: one row per setting, the docs written from it, each variable read by its row


ROWS = rows(Settings)
VARIABLES = [entry for entry in ROWS if entry.row.variable is not None]
BOUNDED = [entry for entry in VARIABLES if isinstance(entry.row.grammar, WholeNumber)]
# a value each variable that is not a whole number accepts, and what it reads as
ACCEPTED: dict[str, tuple[str, object]] = {
    "MENUS_BASE_URL": ("https://menus.example.com/", "https://menus.example.com"),
    "MENUS_ISSUER": ("https://id.example.com/a", "https://id.example.com/a"),
    "MENUS_TRUSTED_PROXIES": ("10.0.0.2, 10.1.0.0/16", ("10.0.0.2/32", "10.1.0.0/16")),
    "MENUS_DOCS": ("off", False),
    "MENUS_CORS_ORIGINS": ("https://a.example https://b.example", ("https://a.example", "https://b.example")),
    "MENUS_CONSOLE_PATH": ("/dev/console", "/dev/console"),
    "MENUS_DATABASE_URL": ("sqlite:///elsewhere.sqlite3", "sqlite:///elsewhere.sqlite3"),
    "MENUS_SECRET_KEYS": ("A" * 43 + "=", ("A" * 43 + "=",)),
    "MENUS_RATE_LIMIT_STORAGE": ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
    "MENUS_PUBLIC_CLIENTS": ("on", True),
    "MENUS_SMTP_URL": ("smtps://relay.example.com", "smtps://relay.example.com"),
    "MENUS_MAIL_DIR": ("/srv/outbox", "/srv/outbox"),
    "MENUS_MAIL_FROM": ("Menus <menus@example.com>", "Menus <menus@example.com>"),
    "MENUS_OUTBOUND_LOOPBACK": ("true", True),
}


def test_operations_md_tables_are_the_ones_generated_from_the_settings_table() -> None:
    text = OPERATIONS_MD.read_text(encoding="utf-8")
    assert regenerated(text) == text, "docs/operations.md: run python -m tools.settings_doc"


def test_every_row_of_the_settings_table_is_in_operations_md_once() -> None:
    text = OPERATIONS_MD.read_text(encoding="utf-8")
    for entry in each(ROWS, at_least=80):
        name = entry.row.variable or entry.name
        assert text.count(f"| `{name}` |") == 1, name


def test_a_default_edited_by_hand_in_the_docs_is_written_back_from_the_table() -> None:
    text = OPERATIONS_MD.read_text(encoding="utf-8")
    assert regenerated(text.replace("| `MENUS_RATE_LIMIT` | `600` |", "| `MENUS_RATE_LIMIT` | `60` |")) == text
    assert regenerated(text.replace("| `mail_batch` | `int` | `20` |", "| `mail_batch` | `int` | `2` |")) == text


def test_variable_names_are_unique_menus_names_and_each_row_has_one_line_saying_what_it_is_for() -> None:
    names = [entry.row.variable for entry in VARIABLES]
    assert len(names) == len(set(names)) and all(re.fullmatch(r"MENUS_[A-Z_]+", str(name)) for name in names)
    assert all(entry.row.description and "\n" not in entry.row.description for entry in ROWS)


def test_unset_variables_leave_every_setting_at_its_default() -> None:
    assert Settings.from_env({}) == Settings()
    assert {entry.name: entry.default for entry in ROWS} == {
        f.name: getattr(Settings(), f.name) for f in fields(Settings)
    }


@pytest.mark.parametrize("entry", VARIABLES, ids=lambda entry: entry.row.variable)
def test_each_variable_sets_its_own_setting_and_no_other(entry: Entry, tmp_path: Path) -> None:
    variable = str(entry.row.variable)
    if isinstance(entry.row.grammar, WholeNumber):
        text, value = str(entry.row.grammar.minimum + 7), entry.row.grammar.minimum + 7
    else:
        text, value = ACCEPTED[variable]
    read = Settings.from_env({variable: text})
    assert getattr(read, entry.name) == value
    assert read == Settings().with_changes(**{entry.name: value})


@pytest.mark.parametrize("entry", BOUNDED, ids=lambda entry: entry.row.variable)
def test_a_whole_number_below_its_bound_is_refused_with_the_documented_message(entry: Entry) -> None:
    variable, minimum = str(entry.row.variable), entry.row.grammar.minimum  # type: ignore[union-attr]
    below = str(minimum - 1) if minimum > 0 else "-1"
    message = f"{variable} must be a whole number of at least {minimum}, got '{below}'"
    with pytest.raises(ConfigurationError) as refused:
        Settings.from_env({variable: below})
    assert str(refused.value) == message
    assert getattr(Settings.from_env({variable: str(minimum)}), entry.name) == minimum  # the bound itself is taken
    assert f"a whole number, at least {minimum}" in OPERATIONS_MD.read_text(encoding="utf-8")


def test_a_variable_read_alone_by_a_command_is_read_as_settings_read_it() -> None:
    env = {"MENUS_MAX_KEYS_PER_ORG": "3", "MENUS_OUTBOUND_LOOPBACK": "on", "MENUS_SECRET_KEYS": "A" * 43 + "="}
    read = Settings.from_env(env)
    assert max_keys_per_org_from(env) == read.max_keys_per_org == 3
    assert outbound_loopback_from(env) is read.outbound_loopback is True
    assert secret_keys_from(env) == read.secret_keys
    with pytest.raises(ConfigurationError, match="MENUS_MAX_KEYS_PER_ORG must be a whole number of at least 1"):
        max_keys_per_org_from({"MENUS_MAX_KEYS_PER_ORG": "0"})


def test_a_smaller_identity_form_limit_answers_413_sooner(settings: Settings, engine: Engine, catalog: Catalog) -> None:
    form = {"grant_type": "client_credentials", "pad": "a" * 2048}
    with TestClient(make_app(settings, catalog=catalog)) as default:
        read = default.post("/oauth2/token", data=form)  # no client: read, then refused (invalid_client, 400)
        assert read.status_code == 400 and read.json()["error"] == "invalid_client"
    with TestClient(make_app(settings.with_changes(identity_form_limit=1024), catalog=catalog)) as small:
        refused = small.post("/oauth2/token", data=form)
    assert refused.status_code == 413 and refused.json()["error"] == "invalid_request"


def test_a_smaller_console_form_limit_answers_413_sooner(settings: Settings, engine: Engine, catalog: Catalog) -> None:
    form = {"csrf_token": "x", "name": "n" * 2048}
    with TestClient(make_app(settings, catalog=catalog), follow_redirects=False) as default:
        assert default.post("/console/keys", data=form).status_code != 413
    with TestClient(make_app(settings.with_changes(console_form_limit=1024), catalog=catalog)) as small:
        assert small.post("/console/keys", data=form).status_code == 413


def test_a_smaller_sign_in_limit_throttles_sooner(
    settings: Settings, engine: Engine, catalog: Catalog, web: Registered, user: User
) -> None:
    app = make_app(settings.with_changes(sign_in_account_limit=2), catalog=catalog)
    with TestClient(app, follow_redirects=False) as browser:
        for _ in range(2):
            page = sign_in(browser, to_page(authorize(browser, web.id), "sign-in"), password="wrong password here")
            assert "Invalid email or password" in page.text
        third = sign_in(browser, to_page(authorize(browser, web.id), "sign-in"), password="wrong password here")
    assert_error_page(third, status=429)


def test_the_preflight_max_age_is_the_settings(settings: Settings, engine: Engine, catalog: Catalog) -> None:
    with TestClient(make_app(settings.with_changes(cors_max_age=42), catalog=catalog)) as client:
        preflight = client.options(
            "/v1/menus/regions",
            headers={"Origin": "https://app.example", "Access-Control-Request-Method": "GET"},
        )
    assert preflight.headers["access-control-max-age"] == "42"


def test_the_refresh_interval_is_at_most_a_quarter_of_the_publish_delay() -> None:
    assert Settings(key_publish_delay=120, published_keys_refresh=60).published_keys_interval() == 30
    assert Settings(key_publish_delay=120, published_keys_refresh=10).published_keys_interval() == 10
    assert Settings(key_publish_delay=0).published_keys_interval() == 0.25  # and a quarter second at least


def test_the_smtp_url_keeps_its_credentials_percent_decoded_and_its_default_ports() -> None:
    settings = Settings.from_env({"MENUS_SMTP_URL": "smtp://mailer:p%40ss%3Aword@mail.example.com"})
    server = SmtpServer.parse(settings.smtp_url)
    assert (server.host, server.port, server.implicit_tls) == ("mail.example.com", 587, False)
    assert (server.username, server.password) == ("mailer", "p@ss:word")  # RFC 3986 §2.1
    assert SmtpServer.parse("smtps://relay.example.com").port == 465  # RFC 8314 §3.3: implicit TLS
    assert server.describe() == "smtp://mail.example.com:587"  # never the password in a log line


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("smtp://localhost:1025", True),
        ("smtp://127.0.0.1:1025", True),
        ("smtp://[::1]:1025", True),
        ("smtp://10.0.0.25", False),
        ("smtp://mail.example.com", False),
        ("smtp://localhost.example.com", False),
    ],
)
def test_only_a_loopback_smtp_server_may_be_spoken_to_in_the_clear(url: str, loopback: bool) -> None:
    """The transport refuses a server off loopback that offers no STARTTLS (service/mail/transports.py): a name is
    loopback only when it is ``localhost`` or a loopback address, never by resolving it."""
    assert SmtpServer.parse(url).loopback is loopback


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MENUS_SMTP_URL", "http://mail.example.com"),
        ("MENUS_SMTP_URL", "smtp://"),
        ("MENUS_SMTP_URL", "smtp://mail.example.com:99999"),
        ("MENUS_SMTP_URL", "smtp://user:secret@mail.example.com/path"),
        ("MENUS_MAIL_FROM", "nobody"),
        ("MENUS_MAIL_FROM", "a@example.com, b@example.com"),
        ("MENUS_MAIL_FROM", "Menus <menus@example.com>\r\nBcc: x@example.com"),
    ],
)
def test_a_mail_setting_that_cannot_be_used_is_refused_by_name_without_its_secret(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=name) as refused:
        Settings.from_env({name: value})
    assert "secret" not in str(refused.value)


def test_a_mail_folder_is_read_as_an_absolute_path_and_never_together_with_an_smtp_server(tmp_path: Path) -> None:
    assert Settings.from_env({"MENUS_MAIL_DIR": "var/mail"}).mail_dir == str(Path("var/mail").absolute())
    assert Settings.from_env({}).mail_dir == ""  # no transport unless told: a node then claims no mail
    with pytest.raises(ConfigurationError, match="not both"):
        Settings.from_env({"MENUS_MAIL_DIR": str(tmp_path), "MENUS_SMTP_URL": "smtp://127.0.0.1:25"})
