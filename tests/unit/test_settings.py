import ast
import inspect
import itertools
import re
import sys
from dataclasses import fields
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog
from identity.users import User
from service.app import create_app
from service.settings import ConfigurationError, Settings, SmtpServer, default_database_url
from tests.support.identity_fixtures import Registered
from tests.support.identity_pages import assert_error_page, authorize, sign_in, to_page


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


# Every setting documented, and each value reaching what it tunes


def _from_env_fields() -> set[str]:
    """The fields ``Settings.from_env`` sets (from the keywords of its call), and the variables it reads."""
    tree = ast.parse(inspect.getsource(Settings.from_env).strip().replace("\n    ", "\n"))
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "cls")
    return {keyword.arg for keyword in call.keywords if keyword.arg}


def _table(heading: str) -> dict[str, str]:
    """The table under ``heading`` in docs/operations.md: its first column (a name in backticks) to its second."""
    text = (Path(__file__).parents[2] / "docs" / "operations.md").read_text(encoding="utf-8")
    lines = text.split(heading + "\n", 1)[1].splitlines()
    first = next(number for number, line in enumerate(lines) if line.startswith("|"))
    rows = itertools.takewhile(lambda line: line.startswith("|"), lines[first:])
    return {m[1]: m[2] for line in rows if (m := re.match(r"\| `([^`]+)` \| (.*?) \|", line))}


def test_operations_md_lists_every_variable_that_settings_reads() -> None:
    settings_source = inspect.getsource(sys.modules[Settings.__module__])
    read = set(re.findall(r'"(MENUS_[A-Z_]+)"', settings_source))
    documented = {name for name in _table("## Configuration") if name.startswith("MENUS_")}
    assert documented == read


def test_operations_md_lists_every_fixed_setting_with_its_default() -> None:
    fixed = {f.name: f.default for f in fields(Settings) if f.name not in _from_env_fields()}
    table = _table("### Fixed settings")
    assert set(table) == set(fixed)
    assert {name: f"`{value!r}`" for name, value in fixed.items()} == table


def test_a_smaller_identity_form_limit_answers_413_sooner(settings: Settings, engine: Engine, catalog: Catalog) -> None:
    form = {"grant_type": "client_credentials", "pad": "a" * 2048}
    with TestClient(create_app(settings, catalog=catalog)) as default:
        read = default.post("/oauth2/token", data=form)  # no client: read, then refused (invalid_client, 400)
        assert read.status_code == 400 and read.json()["error"] == "invalid_client"
    with TestClient(create_app(settings.with_changes(identity_form_limit=1024), catalog=catalog)) as small:
        refused = small.post("/oauth2/token", data=form)
    assert refused.status_code == 413 and refused.json()["error"] == "invalid_request"


def test_a_smaller_console_form_limit_answers_413_sooner(settings: Settings, engine: Engine, catalog: Catalog) -> None:
    form = {"csrf_token": "x", "name": "n" * 2048}
    with TestClient(create_app(settings, catalog=catalog), follow_redirects=False) as default:
        assert default.post("/console/keys", data=form).status_code != 413
    with TestClient(create_app(settings.with_changes(console_form_limit=1024), catalog=catalog)) as small:
        assert small.post("/console/keys", data=form).status_code == 413


def test_a_smaller_sign_in_limit_throttles_sooner(
    settings: Settings, engine: Engine, catalog: Catalog, web: Registered, user: User
) -> None:
    app = create_app(settings.with_changes(sign_in_account_limit=2), catalog=catalog)
    with TestClient(app, follow_redirects=False) as browser:
        for _ in range(2):
            page = sign_in(browser, to_page(authorize(browser, web.id), "sign-in"), password="wrong password here")
            assert "Invalid email or password" in page.text
        third = sign_in(browser, to_page(authorize(browser, web.id), "sign-in"), password="wrong password here")
    assert_error_page(third, status=429)


def test_the_preflight_max_age_is_the_settings(settings: Settings, engine: Engine, catalog: Catalog) -> None:
    with TestClient(create_app(settings.with_changes(cors_max_age=42), catalog=catalog)) as client:
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
