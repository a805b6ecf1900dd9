from pathlib import Path

import pytest

from service.settings import Settings, default_database_url


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
