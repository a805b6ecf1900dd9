"""The organization picker: a user of several organizations chooses the one the tokens carry."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization, OrganizationStore
from identity.accounts.users import User
from tests.support import identity_pages as pages
from tests.support.identity_fixtures import Registered

# The organization picker.


def test_user_of_two_organizations_chooses_one_and_tokens_carry_it(
    browser: TestClient, web: Registered, two_org_user: User
) -> None:
    location = pages.to_page(pages.authorize(browser, web.id), "sign-in")
    picker = pages.to_page(pages.sign_in(browser, location, two_org_user.email), "select-organization")
    html = pages.show(browser, picker).text
    for membership in two_org_user.memberships:
        assert f'name="org_id" value="{membership.org.id}"' in html and membership.org.name in html
    chosen = two_org_user.memberships[1].org
    body = pages.tokens(browser, web, pages.code_of(pages.submit(browser, picker, {"org_id": chosen.id})))
    id_token = pages.verified(browser, body["id_token"], web.id)
    access = pages.verified(browser, body["access_token"], pages.ISSUER)
    assert (id_token["org_id"], id_token["org_name"]) == (chosen.id, chosen.name)
    assert (access["org_id"], access["org_name"]) == (chosen.id, chosen.name)
    info = browser.get("/oauth2/userinfo", headers=pages.bearer(body["access_token"])).json()
    assert (info["org_id"], info["org_name"]) == (chosen.id, chosen.name)


@pytest.mark.parametrize("choice", ["stranger", "none"])
def test_choosing_an_organization_the_user_is_not_in_shows_the_picker_again_with_an_error(
    browser: TestClient, web: Registered, two_org_user: User, engine: Engine, choice: str
) -> None:
    stranger = OrganizationStore(engine).create("Corner Deli")
    location = pages.to_page(pages.authorize(browser, web.id), "sign-in")
    picker = pages.to_page(pages.sign_in(browser, location, two_org_user.email), "select-organization")
    response = pages.submit(browser, picker, {"org_id": stranger.id} if choice == "stranger" else {})
    assert response.status_code == 200
    pages.assert_page_headers(response)
    assert "Choose one of your organizations." in response.text
    assert stranger.name not in response.text


def test_session_remembers_the_organization_and_prompt_select_account_asks_again(
    browser: TestClient, web: Registered, two_org_user: User
) -> None:
    first, second = (m.org for m in two_org_user.memberships)
    location = pages.to_page(pages.authorize(browser, web.id), "sign-in")
    picker = pages.to_page(pages.sign_in(browser, location, two_org_user.email), "select-organization")
    pages.code_of(pages.submit(browser, picker, {"org_id": first.id}))

    silent = pages.tokens(browser, web, pages.code_of(pages.authorize(browser, web.id)))
    assert pages.verified(browser, silent["id_token"], web.id)["org_id"] == first.id

    picker = pages.to_page(pages.authorize(browser, web.id, prompt="select_account"), "select-organization")
    again = pages.tokens(browser, web, pages.code_of(pages.submit(browser, picker, {"org_id": second.id})))
    assert pages.verified(browser, again["id_token"], web.id)["org_id"] == second.id


def test_prompt_select_account_shows_the_picker_even_for_a_user_of_one_organization(
    browser: TestClient, web: Registered, user: User, org: Organization
) -> None:
    pages.signed_in_code(browser, web.id)
    picker = pages.to_page(pages.authorize(browser, web.id, prompt="select_account"), "select-organization")
    pages.code_of(pages.submit(browser, picker, {"org_id": org.id}))


def test_user_of_one_organization_never_sees_the_picker(browser: TestClient, web: Registered, user: User) -> None:
    body = pages.tokens(browser, web, pages.signed_in_code(browser, web.id))
    assert pages.verified(browser, body["id_token"], web.id)["org_name"] == "Acme Foods"
