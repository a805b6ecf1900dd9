"""Bad input at the browser-facing endpoints: the authorization query and every HTML form post (sign-in, sign-up,
organization picker, consent, sign-out confirmation).

Whatever arrives — malformed UTF-8, megabyte fields, missing, doubled or foreign CSRF tokens, CR/LF in
``redirect_uri`` and ``state``, markup in every field — the answer is never a 5xx, never a page that carries
the markup unescaped (the pages have no script at all, so ``<script`` never appears in one), never a redirect
anywhere but the provider's own pages or a URI registered exactly, and never a header the input made up.

A deterministic table of nasty inputs runs against every field of every form, then Hypothesis generates more
(bounded), all through the ASGI app in process. What an HTTP client library will not send (raw non-UTF-8 bytes in
the request line) goes to a live server in tests/system/test_bad_input.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from identity.accounts.organizations import OrganizationStore
from identity.accounts.users import UserStore
from identity.clients.registry import ClientStore
from identity.tokens.pkce import challenge_of
from service.database.db import make_engine
from service.database.schema import upgrade
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.defaults import POOL
from tests.support.form_browser import FormParser
from tests.support.identity_fixtures import PASSWORD
from tests.support.loops import each
from tests.support.passwords import FAST_HASHING

ISSUER = "http://127.0.0.1:8000"  # the settings' default issuer: the pages redirect to it
CALLBACK = "https://app.example/callback"
SIGNED_OUT = "https://app.example/signed-out"
REGISTERED = (CALLBACK, SIGNED_OUT)
VERIFIER = "a-verifier-of-forty-three-characters-or-more_0123456789"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
MEGABYTE = 1_000_000
URL_ROOM = 20_000  # characters of a value that fit in a URL once percent-encoded

# name → value; each goes into every field and every authorization parameter in turn.
NASTY = {
    "script": "<script>alert(1)</script>",
    "attribute break-out": '"><svg onload=alert(1)>',
    "single-quote break-out": "' autofocus onfocus='alert(1)",
    "CR LF header": "x\r\nSet-Cookie: injected=1\r\nX-Injected: 1",
    "LF header": "x\nX-Injected: 1",
    "percent-encoded CR LF": "x%0d%0aX-Injected:%201",
    "NUL": "a\x00b",
    "control characters": "\x01\x1b[31m\x7f\x85",
    "odd Unicode": "\u202e\ufeff\uffff\U0010ffff",
    "a megabyte": "a" * MEGABYTE,
    "a megabyte of markup": "<b>" * (MEGABYTE // 3),
    "template": "{{ 7*7 }}{% raw %}",
    "javascript URI": "javascript:alert(1)",
    "another host": "https://evil.example/callback",
    "protocol-relative": "//evil.example/callback",
    "registered plus a host": CALLBACK + ".evil.example",
    "registered plus a path": CALLBACK + "/../../evil",
    "registered with userinfo": "https://app.example@evil.example/callback",
    "registered with a fragment": CALLBACK + "#fragment",
    "registered with CR LF": CALLBACK + "\r\nX-Injected: 1",
    "registered sign-out URI": SIGNED_OUT,
    "unclosed IPv6 bracket": "http://[::1:99/callback",
    "fullwidth solidus before userinfo": "http://127.0.0.1\uff0f@evil.example/callback",
    "empty": "",
}
MARKUP = [value for value in NASTY.values() if any(c in value for c in "<>\"'") and len(value) < 100]
# Query bytes that decode to malformed UTF-8: a lone continuation byte, an overlong '/', a truncated sequence.
MALFORMED_QUERY = "%FF%FE%C0%AF%E2%82"
MALFORMED_BODY = b"\xff\xfe\xc0\xaf\xe2\x82"

AUTHORIZE_PARAMETERS = ("client_id", "redirect_uri", "state", "scope", "response_type", "code_challenge",
                        "code_challenge_method", "nonce", "prompt", "login_hint", "max_age")  # fmt: skip


@dataclass(frozen=True)
class World:
    app: object
    web: str  # a first-party client: no consent
    partner: str  # a third-party client: the consent page
    email: str  # a member of one organization
    picker_email: str  # a member of two: the organization picker


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    url = f"sqlite:///{tmp_path_factory.mktemp('bad-input') / 'state.sqlite3'}"
    engine = make_engine(url, POOL)
    upgrade(engine)
    orgs = OrganizationStore(engine)
    org, other = orgs.create("Acme Foods"), orgs.create("Blue Harbor")
    users = UserStore(engine, hashing=FAST_HASHING)
    users.create("ana@example.com", "Ana", PASSWORD, [(org.id, "owner")])
    users.create("bo@example.com", "Bo", PASSWORD, [(org.id, "member"), (other.id, "admin")])
    clients = ClientStore(engine)
    uris = {"redirect_uris": [CALLBACK], "post_logout_redirect_uris": [SIGNED_OUT]}
    web, _ = clients.create(
        name="Menus Web", org_id=org.id, auth_method="client_secret_basic", first_party=True, **uris
    )
    partner, _ = clients.create(name="Partner", org_id=org.id, auth_method="client_secret_basic", **uris)
    engine.dispose()
    app = make_app(Settings(database_url=url, validate_responses=True, purge_interval=0))
    yield World(app, web.id, partner.id, "ana@example.com", "bo@example.com")
    app.engine.dispose()


_addresses = itertools.count()


def new_browser(world: World) -> TestClient:
    """A browser of its own address, so that the failed sign-ins of the fuzzing never reach the throttle."""
    n = next(_addresses)
    return TestClient(world.app, follow_redirects=False, client=(f"127.9.{n // 250 % 250}.{n % 250 + 1}", 40000))  # type: ignore[arg-type]


def assert_safe(response: httpx.Response) -> None:
    """No 5xx, no markup reflected, no redirect off the provider but to a registered URI, no header injected."""
    assert response.status_code < 500, response.text[:500]
    names = {name.lower() for name in response.headers}
    assert "x-injected" not in names, response.headers
    assert all("injected" not in cookie for cookie in response.headers.get_list("set-cookie")), response.headers
    location = response.headers.get("location")
    if location is not None:
        assert on_provider_page(location) or any(
            location == uri or location.startswith(uri + "?") for uri in REGISTERED
        ), f"an open redirect: {location[:300]}"
    if response.headers.get("content-type", "").startswith("text/html"):
        page = response.text
        assert "<script" not in page.lower() and "<svg" not in page.lower(), page[:2000]
        for markup in MARKUP:
            assert markup not in page, f"{markup!r} reflected unescaped"


def on_provider_page(location: str) -> bool:
    """A provider's page: under the issuer, or a path of its own (not ``//host``, which is another site)."""
    if location.startswith(ISSUER + "/"):
        return True
    return location.startswith("/") and not location.startswith("//") and "\\" not in location


def on_provider(browser: TestClient, response: httpx.Response) -> httpx.Response:
    """Follow the redirects that stay on the provider, checking each hop."""
    for _ in range(10):
        assert_safe(response)
        location = response.headers.get("location")
        if location is None or not on_provider_page(location):
            return response
        parts = urlsplit(location)
        response = browser.get(f"{parts.path}?{parts.query}")
    raise AssertionError("too many redirects")


def authorize_query(world: World, client_id: str | None = None, **changes: str) -> dict[str, str]:
    return {"response_type": "code", "client_id": client_id or world.web, "redirect_uri": CALLBACK,
            "scope": "openid profile", "state": "s", "code_challenge": challenge_of(VERIFIER),
            "code_challenge_method": "S256", **changes}  # fmt: skip


@dataclass
class Form:
    browser: TestClient
    action: str  # a path
    fields: dict[str, str]


def form_of(browser: TestClient, response: httpx.Response) -> Form:
    assert response.status_code == 200, response.text[:500]
    parser = FormParser()
    parser.feed(response.text)
    form = parser.forms[0]
    fields = {**form.fields, **form.checked, **{name: values[0] for name, values in form.buttons.items()}}
    return Form(browser, urlsplit(form.action).path, fields)


def open_form(world: World, page: str) -> Form:
    """A fresh browser at ``page``'s form, reached as a user would."""
    browser = new_browser(world)
    if page == "end-session":
        signed_in = submit(open_form_in(browser, world, "sign-in"), email=world.email, password=PASSWORD)
        assert signed_in.headers["location"].startswith(CALLBACK + "?"), signed_in.headers
        query = urlencode({"client_id": world.web, "post_logout_redirect_uri": SIGNED_OUT, "state": "s"})
        return form_of(browser, browser.get(f"/oauth2/end-session?{query}"))
    return open_form_in(browser, world, page)


def open_form_in(browser: TestClient, world: World, page: str) -> Form:
    client_id = world.partner if page == "consent" else None
    changes = {"prompt": "create"} if page == "sign-up" else {}
    landed = on_provider(browser, browser.get("/oauth2/authorize", params=authorize_query(world, client_id, **changes)))
    form = form_of(browser, landed)
    if page in ("consent", "select-organization"):
        email = world.picker_email if page == "select-organization" else world.email
        form = form_of(browser, on_provider(browser, submit(form, email=email, password=PASSWORD)))
    assert form.action == f"/{page}", form.action
    return form


def submit(form: Form, **values: str) -> httpx.Response:
    return form.browser.post(form.action, data={**form.fields, **values})


PAGES = {
    "sign-in": ("interaction", "csrf_token", "email", "password"),
    "sign-up": ("interaction", "csrf_token", "name", "email", "password", "organization"),
    "select-organization": ("interaction", "csrf_token", "org_id"),
    "consent": ("interaction", "csrf_token", "decision"),
    "end-session": ("csrf_token", "confirm", "client_id", "post_logout_redirect_uri", "state", "id_token_hint"),
}


def test_authorization_query_survives_every_nasty_value_in_every_parameter(world: World) -> None:
    """Each parameter in turn holds each nasty value (in the query and in a form post), then malformed UTF-8;
    redirects followed while on the provider."""
    for name in AUTHORIZE_PARAMETERS:
        with new_browser(world) as browser:
            for value in NASTY.values():
                # a URL holds at most 64 KiB (httpx; servers allow less): a megabyte goes in the form post instead
                query = authorize_query(world, **{name: value[:URL_ROOM]})
                on_provider(browser, browser.get("/oauth2/authorize", params=query))
                on_provider(browser, browser.post("/oauth2/authorize", data=authorize_query(world, **{name: value})))
            malformed = urlencode(authorize_query(world)) + f"&{name}={MALFORMED_QUERY}"
            on_provider(browser, browser.get(f"/oauth2/authorize?{malformed}"))


@pytest.mark.parametrize("redirect_uri", ["http://[::1:99/callback", "http://127.0.0.1%EF%BC%8F@evil.example/callback"])
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_redirect_uri_that_is_no_uri_is_an_error_page_without_a_redirect(
    world: World, method: str, redirect_uri: str
) -> None:
    """RFC 6749 §4.1.2.1: an invalid redirection URI is told to the user, never redirected to. The second one
    decodes to U+FF0F, which NFKC normalization turns into '/': Python's urlsplit refuses such a netloc."""
    encoded = redirect_uri.replace("[", "%5B").replace(":", "%3A").replace("/", "%2F").replace("@", "%40")
    query = urlencode(authorize_query(world, redirect_uri="REDIRECT_URI")).replace("REDIRECT_URI", encoded)
    with new_browser(world) as browser:
        if method == "GET":
            response = browser.get(f"/oauth2/authorize?{query}")
        else:
            response = browser.post("/oauth2/authorize", content=query, headers=FORM)
    assert response.status_code == 400 and "location" not in response.headers
    assert response.headers["content-type"].startswith("text/html")


def test_registered_redirect_uri_with_crlf_is_refused_without_a_redirect(world: World) -> None:
    """A redirect_uri is compared exactly, so CR LF after a registered one makes it unregistered: an error page."""
    with new_browser(world) as browser:
        response = browser.get(
            "/oauth2/authorize", params=authorize_query(world, redirect_uri=NASTY["registered with CR LF"])
        )
    assert response.status_code == 400 and "location" not in response.headers
    assert_safe(response)


def test_state_with_crlf_is_refused_with_an_error_page_and_never_echoed(world: World) -> None:
    """RFC 6749 Appendix A.5: state is visible ASCII; CR LF in it is refused as every control character is."""
    with new_browser(world) as browser:
        query = authorize_query(world, state=NASTY["CR LF header"], prompt="none")
        response = browser.get("/oauth2/authorize", params=query)
    assert response.status_code == 400 and "location" not in response.headers
    assert "injected" not in response.text
    assert_safe(response)


def test_state_with_percent_encoded_crlf_goes_back_as_sent_in_one_location_header(world: World) -> None:
    with new_browser(world) as browser:
        query = authorize_query(world, state=NASTY["percent-encoded CR LF"], prompt="none")
        response = browser.get("/oauth2/authorize", params=query)
    assert response.status_code == 302
    assert response.headers["location"].startswith(CALLBACK + "?error=login_required")
    assert "state=x%250d%250aX-Injected%3A%25201" in response.headers["location"]
    assert_safe(response)


@pytest.mark.parametrize("page", list(PAGES))
def test_form_post_survives_every_nasty_value_in_every_field(world: World, page: str) -> None:
    """Each field of the page's form in turn holds each nasty value; a form that the post used up is opened anew."""
    for name in PAGES[page]:
        form = open_form(world, page)
        for label, value in NASTY.items():
            if page == "end-session" and name == "state" and label.startswith("a megabyte"):
                continue  # echoed whole in the Location header: longer than an HTTP client takes (see the notes)
            response = on_provider(form.browser, submit(form, **{name: value}))
            if response.is_redirect:  # the post was valid after all: signed out, or the sign-in finished
                form.browser.close()
                form = open_form(world, page)
        form.browser.close()


@pytest.mark.parametrize("page", list(PAGES))
def test_form_post_with_missing_doubled_or_foreign_csrf_token_is_refused(world: World, page: str) -> None:
    form, other = open_form(world, page), open_form(world, page)
    fields = {name: value for name, value in form.fields.items() if name != "csrf_token"}
    token = form.fields["csrf_token"]
    cases = {
        "missing": list(fields.items()),
        "empty": [*fields.items(), ("csrf_token", "")],
        "doubled": [*fields.items(), ("csrf_token", token), ("csrf_token", token)],
        "another form's": [*fields.items(), ("csrf_token", other.fields["csrf_token"])],
        "wrong": [*fields.items(), ("csrf_token", "A" * 43)],
    }  # fmt: skip
    for case, pairs in each(cases.items()):
        response = form.browser.post(form.action, content=urlencode(pairs).encode(), headers=FORM)
        assert_safe(response)
        assert response.status_code == 400 and "location" not in response.headers, (case, response.text[:300])
    form.browser.close()
    other.browser.close()


@pytest.mark.parametrize("page", list(PAGES))
def test_form_post_with_malformed_utf8_or_a_megabyte_body_is_answered(world: World, page: str) -> None:
    """Raw bytes that are not UTF-8, in a value and in a name; a megabyte field; a body that is not a form."""
    form = open_form(world, page)
    valid = urlencode(form.fields).encode()
    bodies = [
        valid + b"&email=" + MALFORMED_BODY + b"&state=" + MALFORMED_BODY,
        valid + b"&" + MALFORMED_BODY + b"=1",
        MALFORMED_BODY,
        valid.replace(b"csrf_token=", b"csrf_token=" + MALFORMED_BODY),
        valid + b"&name=" + b"%FF" * MEGABYTE,
        valid + b"&" + b"x" * MEGABYTE + b"=1",
        b"&&&===%%%",
        b"&".join(b"f%d=1" % n for n in range(1001)) + b"&" + valid,  # more fields than the parser takes
    ]
    for body in bodies:
        on_provider(form.browser, form.browser.post(form.action, content=body, headers=FORM))
    for content_type in ("application/json", "multipart/form-data; boundary=x", "text/plain; charset=utf-8"):
        response = form.browser.post(
            form.action, content=b'{"email": "<script>"}', headers={"Content-Type": content_type}
        )
        assert_safe(response)
    form.browser.close()


def test_form_field_over_a_mebibyte_is_a_413_in_the_endpoints_form_not_a_500(world: World) -> None:
    """Starlette's form parser refused a field over 1 MiB with an exception that escaped as a 500; such a body
    is now over the 64 KiB cap, refused before it is parsed, in the endpoint's own error form."""
    form = open_form(world, "sign-in")
    page = submit(form, email="a" * (1024 * 1024 + 1))
    token = form.browser.post("/oauth2/token", data={"grant_type": "client_credentials", "scope": "x" * 1024 * 1025})
    form.browser.close()
    assert page.status_code == 413 and page.headers["content-type"].startswith("text/html"), page.text[:300]
    assert "Request too large" in page.text
    assert token.status_code == 413 and token.json()["error"] == "invalid_request", token.text[:300]


# Hypothesis: arbitrary text (no surrogates: they cannot be sent as UTF-8) in the authorization query and the forms.
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=60)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(AUTHORIZE_PARAMETERS), TEXT | st.sampled_from(list(NASTY.values())[:9])))
def test_any_authorization_query_is_answered_safely(world: World, changes: dict[str, str]) -> None:
    with new_browser(world) as browser:
        on_provider(browser, browser.get("/oauth2/authorize", params=authorize_query(world, **changes)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["sign-in", "sign-up"]),
    st.dictionaries(st.sampled_from(["email", "password", "name", "organization", "csrf_token", "interaction"]), TEXT),
    st.binary(max_size=40),
)
def test_any_sign_in_or_sign_up_post_is_answered_safely(
    world: World, page: str, values: dict[str, str], raw: bytes
) -> None:
    form = open_form(world, page)
    on_provider(form.browser, submit(form, **values))
    body = urlencode({**form.fields, **values}).encode() + b"&email=" + raw
    on_provider(form.browser, form.browser.post(form.action, content=body, headers=FORM))
    form.browser.close()
