"""The sign-in pages' CSRF check in the domain (identity/interaction/pending.py, identity/interaction/store.py): a form
post without its interaction's token, or with an empty one, is refused by the pages themselves, whatever the contract
in front of it (which today also requires a token of at least one character: the two checks guard the rule apart)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy.engine import Engine

from identity.accounts.organizations import OrganizationStore
from identity.accounts.users import UserStore
from identity.clients.registry import ClientStore
from identity.common.errors import ErrorPage
from identity.common.issuer import Issuer
from identity.interaction.browser import Browser, interaction_cookie
from identity.keys.sealing import Sealer, new_key
from identity.provider import Provider
from identity.tokens.pkce import challenge_of
from tests.support.defaults import LIFETIMES, TUNING
from tests.support.identity_fixtures import CALLBACK, EMAIL, PASSWORD
from tests.support.passwords import FAST_HASHING

ON_BOTH_ENGINES = True  # every test here runs on SQLite and on PostgreSQL

ISSUER = "http://127.0.0.1:8000"


@pytest.fixture
def started(engine: Engine) -> tuple[Provider, Browser, str, str]:
    """A provider, a browser bound to a sign-in it started, that sign-in's interaction and its CSRF token."""
    provider = Provider(
        engine,
        Issuer(ISSUER),
        LIFETIMES,
        TUNING,
        cursor_key=b"c" * 32,
        sealer=Sealer([new_key()]),
        device_key=b"d" * 32,
        password_hashing=FAST_HASHING,
    )
    org = OrganizationStore(engine).create("Acme Foods")
    UserStore(engine, hashing=FAST_HASHING).create(EMAIL, "Ana", PASSWORD, [(org.id, "owner")])
    client, _ = ClientStore(engine).create(
        name="Menus Web", org_id=org.id, auth_method="client_secret_basic", redirect_uris=[CALLBACK], first_party=True
    )
    request = [
        ("response_type", "code"),
        ("client_id", client.id),
        ("redirect_uri", CALLBACK),
        ("scope", "openid"),
        ("state", "s"),
        ("code_challenge", challenge_of("v" * 43)),
        ("code_challenge_method", "S256"),
    ]
    outcome = provider.sign_in_pages.authorization.start(request, Browser())
    assert outcome.location is not None
    interaction = parse_qs(urlsplit(outcome.location).query)["interaction"][0]
    browser = Browser(bindings={cookie.name: cookie.value for cookie in outcome.cookies})
    assert interaction_cookie(interaction) in browser.bindings
    page = provider.sign_in_pages.sign_in.show(interaction, browser).page
    assert page is not None
    return provider, browser, interaction, page.data["csrf_token"]


@pytest.mark.parametrize("csrf", [None, ""], ids=["missing", "empty"])
def test_sign_in_post_without_its_csrf_token_is_refused_by_the_flow(
    started: tuple[Provider, Browser, str, str], csrf: str | None
) -> None:
    provider, browser, interaction, _ = started
    form = [("interaction", interaction), ("email", EMAIL), ("password", PASSWORD)]
    if csrf is not None:
        form.append(("csrf_token", csrf))
    with pytest.raises(ErrorPage) as page:
        provider.sign_in_pages.sign_in.post(form, browser)
    assert page.value.title == "Form expired"
    assert page.value.description == "This form has expired. Go back to the application and sign in again."


def test_sign_in_post_with_its_csrf_token_signs_in(started: tuple[Provider, Browser, str, str]) -> None:
    """The refusals above are of the token, not of the form: the same post with the page's token signs in."""
    provider, browser, interaction, csrf = started
    form = [("interaction", interaction), ("csrf_token", csrf), ("email", EMAIL), ("password", PASSWORD)]
    outcome = provider.sign_in_pages.sign_in.post(form, browser)
    assert outcome.location is not None and outcome.location.startswith(CALLBACK + "?code=")
