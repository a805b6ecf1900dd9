"""Sign-up (prompt=create): the form, its field errors, and the user and organization it creates."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import OrganizationStore
from identity.accounts.users import User, UserStore
from service.console_api.relying_party import SERVICE_ORG_ID
from tests.support import identity_pages as pages
from tests.support.identity_fixtures import EMAIL, PASSWORD, Registered, Shared
from tests.support.passwords import FAST_HASHING

# Sign-up.


def test_prompt_create_redirects_to_the_sign_up_page(visitor: TestClient, shared: Shared) -> None:
    location = pages.to_page(
        pages.authorize(visitor, shared.web.id, prompt="create", login_hint="new@example.com"), "sign-up"
    )
    html = pages.show(visitor, location).text
    for name in ("name", "email", "password", "organization"):
        assert f'<label for="{name}">' in html and f'<input id="{name}" name="{name}"' in html
    assert set(pages.hidden_fields(html)) == {"interaction", "csrf_token"}
    assert 'value="new@example.com"' in html


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"password": "short"}, "The password must be 8 to 1024 characters."),
        ({"password": "p" * 1025}, "The password must be 8 to 1024 characters."),
        ({"email": "not-an-email"}, "The email address is not valid."),
        ({"email": "ANA@example.com"}, "A user with this email address already exists."),
        ({"name": "  "}, "The name must be 1 to 200 characters."),
        ({"organization": ""}, "The organization&#39;s name must be 1 to 200 characters."),
    ],
    ids=["short password", "long password", "bad email", "duplicate email", "blank name", "missing organization"],
)
def test_sign_up_field_errors_show_the_form_again_with_the_message(
    browser: TestClient, web: Registered, user: User, engine: Engine, changes: dict[str, str], message: str
) -> None:
    location = pages.to_page(pages.authorize(browser, web.id, prompt="create"), "sign-up")
    response = pages.submit(browser, location, {**pages.SIGN_UP, **changes})
    assert response.status_code == 200, response.text
    pages.assert_page_headers(response)
    assert 'aria-invalid="true"' in response.text
    assert message in response.text
    assert f'value="{PASSWORD}"' not in response.text  # a password is never sent back
    assert [u.email for u in UserStore(engine, hashing=FAST_HASHING).list()] == [EMAIL]
    organizations = [o.name for o in OrganizationStore(engine).list() if o.id != SERVICE_ORG_ID]  # not the console's
    assert organizations == ["Acme Foods"]


@pytest.mark.parametrize("field", ["name", "organization"])
def test_sign_up_with_a_name_too_long_shows_the_form_again_with_the_message(
    browser: TestClient, web: Registered, field: str
) -> None:
    location = pages.to_page(pages.authorize(browser, web.id, prompt="create"), "sign-up")
    response = pages.submit(browser, location, {**pages.SIGN_UP, field: "N" * 201})
    assert response.status_code == 200, response.text
    assert 'aria-invalid="true"' in response.text and "must be 1 to 200 characters." in response.text


def test_sign_up_creates_user_and_owned_organization_and_tokens_carry_it(
    browser: TestClient, web: Registered, engine: Engine
) -> None:
    location = pages.to_page(pages.authorize(browser, web.id, prompt="create"), "sign-up")
    response = pages.submit(browser, location, pages.SIGN_UP)
    assert "rm_session=" in response.headers["set-cookie"]
    code = pages.code_of(response)
    (created,) = [u for u in UserStore(engine, hashing=FAST_HASHING).list() if u.email == "bo@example.com"]
    assert [(m.org.name, m.role) for m in created.memberships] == [("Bo's Bakery", "owner")]
    id_token = pages.verified(browser, pages.tokens(browser, web, code)["id_token"], web.id)
    assert id_token["sub"] == created.id
    assert (id_token["org_id"], id_token["org_name"]) == (created.memberships[0].org.id, "Bo's Bakery")
    assert (id_token["name"], id_token["email"]) == ("Bo Berg", "bo@example.com")
