"""Control characters are invalid input everywhere (identity/common/text.py), on SQLite and PostgreSQL alike.

A NUL byte in any identity parameter, form field or cookie is refused as a 400 in the endpoint's own error
form, before anything reaches the database (PostgreSQL cannot store NUL in text and answered 503, "cannot reach
its database", so a load balancer would pull the node). Names that others read (organizations, users, API keys,
clients) also refuse zero-width and bidirectional formatting characters, at the command line, at sign-up and in
the console.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization, OrganizationStore
from identity.accounts.users import User, UserStore
from identity.api_keys.keys import ApiKeyStore
from identity.clients.registry import ClientStore
from identity.common.errors import InvalidInput
from identity.common.text import display_name, has_control
from tests.support.console_client import ConsoleBrowser
from tests.support.identity_fixtures import PASSWORD, Registered
from tests.support.identity_pages import (
    SIGN_UP,
    assert_error_page,
    authorization,
    authorize,
    post_form,
    show,
    submit,
    to_page,
)
from tests.support.passwords import FAST_HASHING
from tests.support.token_flows import assert_invalid_client, assert_oauth_error

CONTROLS = ["a\x00b", "a\x1bb", "a\rb", "a\x7fb", "a\x85b"]
SPOOFING = ["a\u202eb", "a\u200bb", "a\u2066b", "\ufeffab", "a\u200fb", "a\u2028b"]


ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


@pytest.fixture
def browser(app: Any) -> Any:
    with TestClient(app, follow_redirects=False) as client:
        yield client


# Parameters and form fields


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_nul_in_client_id_at_authorize_is_the_400_error_page(browser: TestClient, method: str) -> None:
    assert_error_page(authorize(browser, "cli_\x00", method=method), status=400)


@pytest.mark.parametrize("name", ["state", "nonce", "login_hint", "scope"])
def test_a_control_character_in_any_authorization_parameter_is_the_400_error_page(
    browser: TestClient, web: Registered, name: str
) -> None:
    response = authorize(browser, web.id, **{name: "x\x00y"})
    assert_error_page(response, status=400)
    assert "location" not in response.headers


@pytest.mark.parametrize("path", ["/oauth2/token", "/oauth2/introspect", "/oauth2/revoke"])
def test_a_nul_in_a_client_endpoints_form_is_invalid_request(browser: TestClient, path: str) -> None:
    form = {"grant_type": "client_credentials", "client_id": "cli_\x00", "client_secret": "x", "token": "t"}
    assert_oauth_error(browser.post(path, data=form), "invalid_request", 400)


def test_a_nul_in_basic_credentials_is_invalid_client(browser: TestClient) -> None:
    credentials = base64.b64encode(b"cli_%00:secret").decode()
    response = browser.post(
        "/oauth2/token", data={"grant_type": "client_credentials"}, headers={"Authorization": f"Basic {credentials}"}
    )
    assert_invalid_client(response)


@pytest.mark.parametrize("value", CONTROLS)
def test_a_control_character_in_the_sign_in_email_is_the_400_error_page(
    browser: TestClient, web: Registered, user: User, value: str
) -> None:
    location = to_page(authorize(browser, web.id), "sign-in")
    assert_error_page(submit(browser, location, {"email": f"ana{value}@example.com", "password": PASSWORD}))


def test_a_nul_in_the_interaction_is_the_400_error_page(browser: TestClient, web: Registered) -> None:
    location = to_page(authorize(browser, web.id), "sign-in")
    assert_error_page(browser.get("/sign-in", params={"interaction": "int_\x00"}))
    page = show(browser, location)
    assert page.status_code == 200
    form = [("interaction", "int_\x00"), ("email", "a@example.com"), ("password", PASSWORD), ("csrf_token", "x")]
    assert_error_page(post_form(browser, "/sign-in", form))


@pytest.mark.parametrize("field", ["name", "organization", "email"])
def test_a_nul_in_a_sign_up_field_is_the_400_error_page(browser: TestClient, web: Registered, field: str) -> None:
    location = to_page(authorize(browser, web.id, prompt="create"), "sign-up")
    assert_error_page(submit(browser, location, {**SIGN_UP, field: "Bo\x00Berg"}))


def test_a_nul_in_a_session_cookie_is_as_if_there_were_no_session(browser: TestClient, web: Registered) -> None:
    browser.cookies.set("rm_session", '"\\000"')
    response = browser.get("/oauth2/authorize", params=authorization(web.id))
    assert response.status_code == 302  # to the sign-in page, as for a browser without a session


# Names others read


@pytest.mark.parametrize("value", SPOOFING + CONTROLS)
def test_names_refuse_control_zero_width_and_bidirectional_characters(value: str) -> None:
    with pytest.raises(InvalidInput, match="control, zero-width or bidirectional"):
        display_name(value, "the name")


@pytest.mark.parametrize("value", ["Ana Lima", "São Paulo Kitchen", "ಮಸಾಲೆ ದೋಸೆ", "مطبخ", "🍜 Noodles"])
def test_names_in_any_script_are_accepted(value: str) -> None:
    assert display_name(f"  {value} ", "the name") == value


def test_every_store_refuses_a_spoofing_name(engine: Engine, org: Organization) -> None:
    with pytest.raises(InvalidInput):
        OrganizationStore(engine).create("Acme\u202eFoods")
    with pytest.raises(InvalidInput):
        UserStore(engine, hashing=FAST_HASHING).create("bo@example.com", "Bo\u200bBerg", PASSWORD, [(org.id, "member")])
    with pytest.raises(InvalidInput):
        ApiKeyStore(engine).create("prod\u202e", org_id=org.id)
    with pytest.raises(InvalidInput):
        ClientStore(engine).create(name="Menus\x00", org_id=org.id, auth_method="client_secret_basic")
    with pytest.raises(InvalidInput):
        UserStore(engine, hashing=FAST_HASHING).create("bo\x00@example.com", "Bo", PASSWORD, [(org.id, "member")])


@pytest.mark.parametrize("field", ["name", "organization"])
def test_sign_up_refuses_a_bidirectional_override_in_a_name_with_a_field_error(
    browser: TestClient, web: Registered, engine: Engine, field: str
) -> None:
    location = to_page(authorize(browser, web.id, prompt="create"), "sign-up")
    page = submit(browser, location, {**SIGN_UP, field: "Bo\u202eBerg"})
    assert page.status_code == 200 and "bidirectional formatting characters" in page.text  # the form again
    assert not UserStore(engine, hashing=FAST_HASHING).list()


@pytest.mark.parametrize("name", ["prod\u202eved", "prod\x00", "prod\u200b"])
def test_the_console_refuses_a_key_name_with_invisible_characters(app: Any, user: User, name: str) -> None:
    with ConsoleBrowser(app) as console:
        console.complete(console.sign_in(user.email))
        answer, key = console.create_key(name)
    assert key is None and answer.status_code == 400


def test_has_control_sees_c0_c1_and_del_but_not_text() -> None:
    assert all(has_control(value) for value in CONTROLS)
    assert not has_control("Crème brûlée, São Paulo ☕ \u202e")  # a format character is no control
