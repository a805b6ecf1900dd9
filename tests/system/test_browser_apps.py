"""Browser and native apps as public clients, end to end against a live service with ``MENUS_PUBLIC_CLIENTS=on``.

The browser app is ``tests/support/spa/`` (oidc-client-ts 3, bundled with esbuild at test time), served
from a second loopback origin and driven by Playwright in Debian's Chromium: sign in (the provider's
pages), the callback with its token request, userinfo, renewal by refresh token, revocation and sign-out,
each step asserted, with no console error. Its per-step timings and the preflight exchanges the server saw
are printed and written to ``reports/spa.md``. The native app signs in through the same browser to a
loopback redirect on a port picked at start (RFC 8252 §7.3), with PKCE and no secret, then refreshes.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
import requests
from playwright.sync_api import Browser, ConsoleMessage, Page

from tests.support.browser_app import Bundle, ServedApp, bundled_spa, loopback_listener, serve_spa
from tests.support.chromium import TIMEOUT_MS, browser, on_page, playwright
from tests.support.identity_fixtures import PASSWORD
from tests.support.live import ROOT, LiveService, live_service
from tests.support.pkce_pairs import pkce_pair
from tests.support.waiting import eventually

__all__ = ["browser", "playwright"]  # the Chromium fixtures of tests/support/chromium.py
REPORT = ROOT / "reports" / "spa.md"
EMAIL = "ana@example.com"


@dataclass
class Deployment:
    service: LiveService
    spa: ServedApp
    bundle: Bundle
    spa_client: dict[str, Any]
    native_client: dict[str, Any]
    stranger: ServedApp  # the same app on an origin nobody registered
    config: dict[str, str]  # what the app reads at each load (window.SPA_CONFIG)


@dataclass
class Journey:
    """Each step's name and seconds, in order."""

    steps: list[tuple[str, float]] = field(default_factory=list)

    def timed(self, name: str, started: float) -> None:
        self.steps.append((name, time.monotonic() - started))


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    bundle = bundled_spa(tmp_path_factory.mktemp("spa"))
    env = {"MENUS_PUBLIC_CLIENTS": "on"}
    with live_service(tmp_path_factory.mktemp("browser-apps"), env) as service:
        acme = service.cli_json("orgs", "create", "--name", "Acme Foods")
        service.create_user(EMAIL, "Ana Lima", PASSWORD, acme["id"])
        config = {"authority": service.url, "clientId": ""}
        with serve_spa(bundle, config) as spa, serve_spa(bundle, config) as stranger:
            spa_client = service.cli_json(
                "clients", "create", "--name", "Menu Planner", "--org", acme["id"], "--auth-method", "none",
                "--redirect-uri", f"{spa.origin}/callback", "--post-logout-redirect-uri", f"{spa.origin}/signed-out",
                "--web-origin", spa.origin,
            )  # fmt: skip
            config["clientId"] = spa_client["client_id"]  # config.js is made per request from this dict
            native_client = service.cli_json(
                "clients", "create", "--name", "Menu Planner for desktop", "--org", acme["id"],
                "--auth-method", "none", "--redirect-uri", "http://127.0.0.1/callback",
            )  # fmt: skip
            yield Deployment(service, spa, bundle, spa_client, native_client, stranger, config)


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 800, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    yield context.new_page()
    context.close()


def console_errors(page: Page) -> list[str]:
    errors: list[str] = []

    def record(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(f"{message.text} ({message.location.get('url')})")

    page.on("console", record)
    page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    return errors


def reached(page: Page, step: str) -> dict[str, Any]:
    """Wait until the app reports ``step`` (or fails), and return its outcome."""
    status = page.locator("#status")
    # ``?.``: while the callback page is still loading there is no #status yet; keep waiting rather than throw
    reported = "step => ['error', step].includes(document.getElementById('status')?.dataset.step)"
    page.wait_for_function(reported, arg=step)
    text = status.inner_text()
    assert status.get_attribute("data-step") == step, text
    return json.loads(text) if text else {}


def sign_in_on_provider(page: Page, issuer: str) -> None:
    on_page(page, issuer, "/sign-in")
    page.get_by_label("Email").fill(EMAIL)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def allow(page: Page, issuer: str) -> None:
    on_page(page, issuer, "/consent")
    page.get_by_role("button", name="Allow").click()


def server_log(service: LiveService) -> list[dict[str, Any]]:
    lines = (service.workdir / "server.log").read_text(encoding="utf-8").splitlines()
    return [entry for line in lines if line.startswith("{") and "method" in (entry := json.loads(line))]


def preflight_exchange(service: LiveService, origin: str, path: str, method: str, headers: str) -> str:
    """A preflight as Chromium sends it (Origin, method and headers as the app's request needs), and its answer."""
    sent = {"Origin": origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": headers}
    answer = requests.options(service.url + path, headers=sent, timeout=10)
    lines = [f"OPTIONS {path} HTTP/1.1", *(f"{k}: {v}" for k, v in sent.items()), ""]
    lines += [f"HTTP/1.1 {answer.status_code}", *(f"{k}: {v}" for k, v in answer.headers.items())]
    return "\n".join(lines)


def test_spa_signs_in_reads_userinfo_renews_revokes_and_signs_out_without_a_console_error(
    deployment: Deployment, page: Page
) -> None:
    d, issuer, journey = deployment, deployment.service.url, Journey()
    errors = console_errors(page)
    logged_before = len(server_log(d.service))

    started = time.monotonic()
    page.goto(d.spa.origin + "/")
    reached(page, "ready")
    journey.timed("open the app", started)

    started = time.monotonic()
    page.get_by_role("button", name="Sign in").click()  # discovery, then the authorization request with PKCE
    page.wait_for_url(lambda url: url.startswith(issuer))
    journey.timed("redirect to the provider", started)

    started = time.monotonic()
    sign_in_on_provider(page, issuer)
    allow(page, issuer)  # a third-party public client: consent every time
    journey.timed("sign in and consent", started)

    started = time.monotonic()
    signed_in = reached(page, "signed-in")  # callback: state checked, code + verifier at the token endpoint
    journey.timed("callback and token request", started)
    assert signed_in["refresh"] is True and "offline_access" in signed_in["scope"].split()

    started = time.monotonic()
    profile = reached_after(page, "Read profile", "profile")
    journey.timed("userinfo", started)
    assert profile["status"] == 200 and profile["body"]["sub"] == signed_in["sub"]
    assert profile["body"]["email"] == EMAIL

    started = time.monotonic()
    renewed = reached_after(page, "Renew", "renewed")
    journey.timed("renew by refresh token", started)
    assert renewed == {"newAccessToken": True, "rotatedRefreshToken": True, "sub": signed_in["sub"]}

    started = time.monotonic()
    revoked = reached_after(page, "Revoke", "revoked")
    journey.timed("revoke", started)
    assert revoked["refreshTokenKept"] is False
    dead = requests.get(
        f"{issuer}/oauth2/userinfo", headers={"Authorization": "Bearer " + revoked["revokedAccessToken"]}
    )
    assert dead.status_code == 401

    started = time.monotonic()
    page.get_by_role("button", name="Sign out").click()
    signed_out = reached(page, "signed-out")  # end-session with id_token_hint, back with state
    journey.timed("sign out", started)
    assert signed_out == {"signedOut": True, "user": None}
    assert page.url == d.spa.origin + "/signed-out" or page.url.startswith(d.spa.origin + "/signed-out?")

    # Chromium asks the provider for /favicon.ico on its pages, which declare no icon: the browser's request, not
    # the app's (docs/identity.md). Every other console error fails the test.
    assert [e for e in errors if not e.endswith(f"({issuer}/favicon.ico)")] == [], errors
    seen = server_log(d.service)[logged_before:]
    calls = [(e["method"], e["path"], e["status"]) for e in seen if e["path"].startswith("/oauth2/")]
    assert ("POST", "/oauth2/token", 200) in calls and ("POST", "/oauth2/revoke", 200) in calls
    assert [c for c in calls if c[0] == "POST" and c[1] == "/oauth2/token"] == [("POST", "/oauth2/token", 200)] * 2
    preflights = [c for c in calls if c[0] == "OPTIONS"]
    assert preflights and all(status == 204 for _, _, status in preflights), calls
    report(d, journey, calls, signed_in)


def test_an_spa_that_sends_dpop_proofs_signs_in_with_bearer_tokens(deployment: Deployment, page: Page) -> None:
    """oidc-client-ts with ``dpop`` set sends a ``DPoP`` header with each token request: the preflight allows it,
    the provider ignores it (RFC 9449 §5) and issues Bearer tokens, which userinfo takes (it failed at the
    preflight)."""
    d, issuer = deployment, deployment.service.url
    errors = console_errors(page)
    d.config["dpop"] = "on"
    try:
        page.goto(d.spa.origin + "/")
        reached(page, "ready")
        page.get_by_role("button", name="Sign in").click()
        sign_in_on_provider(page, issuer)
        allow(page, issuer)
        signed_in = reached(page, "signed-in")
    finally:
        d.config.pop("dpop")
    assert signed_in["tokenType"] == "Bearer" and signed_in["refresh"] is True
    assert reached_after(page, "Read profile", "profile")["status"] == 200
    assert [e for e in errors if not e.endswith(f"({issuer}/favicon.ico)")] == [], errors
    asked = preflight_exchange(d.service, d.spa.origin, "/oauth2/token", "POST", "content-type,dpop")
    assert (
        "HTTP/1.1 204" in asked and "access-control-allow-headers: content-type, authorization, dpop" in asked.lower()
    )


def reached_after(page: Page, button: str, step: str) -> dict[str, Any]:
    page.get_by_role("button", name=button).click()
    return reached(page, step)


def report(d: Deployment, journey: Journey, calls: list[tuple[str, str, int]], signed_in: dict[str, Any]) -> None:
    """Print the journey and the preflight exchanges (visible with ``-s``) and write them to reports/spa.md."""
    userinfo = preflight_exchange(d.service, d.spa.origin, "/oauth2/userinfo", "GET", "authorization")
    token = preflight_exchange(d.service, d.spa.origin, "/oauth2/token", "POST", "content-type")
    stranger = preflight_exchange(d.service, d.stranger.origin, "/oauth2/token", "POST", "content-type")
    total = sum(seconds for _, seconds in journey.steps)
    lines = [
        "# The browser app's journey (tests/system/test_browser_apps.py)",
        "",
        f"oidc-client-ts bundled by esbuild in {d.bundle.seconds * 1000:.0f} ms; app at {d.spa.origin}, "
        f"provider at {d.service.url}; Chromium headless.",
        "",
        "| step | ms |",
        "|---|---|",
        *(f"| {name} | {seconds * 1000:.0f} |" for name, seconds in journey.steps),
        f"| total | {total * 1000:.0f} |",
        "",
        "Requests of the journey to /oauth2/ as the server logged them (method, path, status):",
        "",
        "```",
        *(" ".join(map(str, call)) for call in calls),
        "```",
        "",
        "Preflights (the same headers as Chromium's), from the registered origin and from another:",
        "",
        "```",
        userinfo,
        "",
        token,
        "",
        stranger,
        "```",
    ]
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(text, encoding="utf-8")


def test_a_page_of_an_unregistered_origin_cannot_spend_a_code(deployment: Deployment, page: Page) -> None:
    """The stranger's page posts a code it somehow holds: refused (403, no CORS header) and the code still works."""
    d, issuer = deployment, deployment.service.url
    verifier, challenge = pkce_pair()
    # A code of the SPA client, obtained by the test through the browser (the app never receives it).
    code = browser_code(page, issuer, d.spa_client["client_id"], f"{d.spa.origin}/callback", challenge)
    form = {"grant_type": "authorization_code", "code": code, "code_verifier": verifier,
            "redirect_uri": f"{d.spa.origin}/callback", "client_id": d.spa_client["client_id"]}  # fmt: skip

    def exchange_from(origin: str) -> requests.Response:
        return requests.post(f"{issuer}/oauth2/token", data=form, headers={"Origin": origin}, timeout=10)

    page.goto(d.stranger.origin + "/")
    logged = len(server_log(d.service))
    outcome = page.evaluate(
        """async ([tokenUrl, form]) => {
            try {
                const answer = await fetch(tokenUrl, {method: 'POST', body: new URLSearchParams(form)});
                return 'read ' + answer.status;
            } catch (error) { return 'blocked: ' + error.message; }
        }""",
        [f"{issuer}/oauth2/token", form],
    )
    assert outcome.startswith("blocked"), outcome  # the page cannot read the answer

    # The server logs a request once its answer is sent, which the page may see first: wait for the line.
    def refused_post() -> bool:
        return any(e["path"] == "/oauth2/token" and e["method"] == "POST" for e in server_log(d.service)[logged:])

    assert eventually(refused_post, 10)
    refused = [e for e in server_log(d.service)[logged:] if e["path"] == "/oauth2/token" and e["method"] == "POST"][-1]
    assert refused["status"] == 403
    print(f"\nrefusal seen by the page of {d.stranger.origin}: {outcome}; the server answered {refused['status']}")
    answer = exchange_from(d.stranger.origin)
    print(f"the same request replayed: {answer.status_code} {answer.text}")
    assert answer.status_code == 403 and answer.json()["error"] == "access_denied"
    assert "access-control-allow-origin" not in {k.lower() for k in answer.headers}
    spent = exchange_from(d.spa.origin)
    assert spent.status_code == 200, spent.text  # the refusals spent nothing


def browser_code(page: Page, issuer: str, client_id: str, redirect_uri: str, challenge: str) -> str:
    """Sign in through the browser for ``client_id`` and return the code of the redirect (not followed)."""
    state = secrets.token_urlsafe(12)
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "scope": "openid",
             "state": state, "code_challenge": challenge, "code_challenge_method": "S256"}  # fmt: skip
    page.route(lambda url: url.startswith(redirect_uri), lambda route: route.abort())  # the app never sees it
    with page.expect_request(lambda request: request.url.startswith(redirect_uri)) as redirected:
        page.goto(f"{issuer}/oauth2/authorize?{urlencode(query)}")
        if "/sign-in" in page.url:
            sign_in_on_provider(page, issuer)
        allow(page, issuer)
    params = dict(parse_qsl(urlsplit(redirected.value.url).query))
    assert params["state"] == state
    return params["code"]


def test_native_app_signs_in_through_a_loopback_redirect_with_pkce_and_no_secret_then_refreshes(
    deployment: Deployment, page: Page
) -> None:
    d, issuer = deployment, deployment.service.url
    client_id = d.native_client["client_id"]
    verifier, challenge = pkce_pair()
    state = secrets.token_urlsafe(12)
    with loopback_listener() as listener:  # RFC 8252 §7.3: registered without a port, any port is accepted
        query = {"response_type": "code", "client_id": client_id, "redirect_uri": listener.redirect_uri,
                 "scope": "openid profile offline_access", "state": state, "code_challenge": challenge,
                 "code_challenge_method": "S256"}  # fmt: skip
        page.goto(f"{issuer}/oauth2/authorize?{urlencode(query)}")  # the "system browser"
        if "/sign-in" in page.url:
            sign_in_on_provider(page, issuer)
        allow(page, issuer)
        assert listener.arrived.wait(10)
    callback = listener.received[-1]
    assert callback["state"] == state and callback["iss"] == issuer
    form = {"grant_type": "authorization_code", "code": callback["code"], "redirect_uri": listener.redirect_uri,
            "code_verifier": verifier, "client_id": client_id}  # fmt: skip
    tokens = requests.post(f"{issuer}/oauth2/token", data=form, timeout=10)
    assert tokens.status_code == 200, tokens.text
    assert {"access_token", "id_token", "refresh_token"} <= set(tokens.json())
    assert set(form) == {"grant_type", "code", "redirect_uri", "code_verifier", "client_id"}  # no secret anywhere
    refreshed = requests.post(
        f"{issuer}/oauth2/token",
        data={"grant_type": "refresh_token", "refresh_token": tokens.json()["refresh_token"], "client_id": client_id},
        timeout=10,
    )
    assert refreshed.status_code == 200, refreshed.text
    assert refreshed.json()["refresh_token"] != tokens.json()["refresh_token"]
    profile = requests.get(
        f"{issuer}/oauth2/userinfo", headers={"Authorization": "Bearer " + refreshed.json()["access_token"]}, timeout=10
    )
    assert profile.status_code == 200 and profile.json()["name"] == "Ana Lima"


def test_the_spa_bundle_is_built_at_test_time_and_never_committed(deployment: Deployment) -> None:
    assert (deployment.bundle.folder / "app.js").stat().st_size > 10_000
    assert not (ROOT / "tests" / "support" / "spa" / "app.bundle.js").exists()
    assert all(not p.name.endswith(".map") for p in Path(ROOT / "tests" / "support" / "spa").iterdir())
