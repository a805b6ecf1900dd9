"""The developer console (openapi/console.yaml) through the ASGI app: signing in with our own provider, the keys
of the signed-in organization, roles, CSRF, the callback's state, usage counting, and two nodes on one database."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import OrganizationStore
from identity.accounts.users import UserStore
from identity.api_keys.keys import ApiKeyStore
from identity.api_keys.usage import UsageCounter
from service.database.db import make_engine
from service.database.schema import upgrade
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.clocks import MovableClock
from tests.support.console_client import ORIGIN, ConsoleBrowser, form_with, forms, key_in
from tests.support.defaults import DEFAULTS, KEY_REVOCATION_BOUND, LAST_USED_RESOLUTION, POOL
from tests.support.identity_fixtures import PASSWORD
from tests.support.passwords import FAST_HASHING

HOME = "/console/"


def menus(app: Any, key: str) -> int:
    """A menus request with ``key``, from a client of its own (whose lifespan's shutdown flushes the usage)."""
    with TestClient(app, base_url=ORIGIN) as client:
        return client.get("/v1/menus/regions", headers={"Authorization": f"Bearer {key}"}).status_code


def flush(app: Any) -> None:
    """What the periodic flush does: write the usage this app counted."""
    next(job for job in app.background.jobs if job.name == "writing API key usage").work()


def usage_cells(html: str, key_name: str) -> tuple[int, int]:
    """The "Today" and "30 days" cells of the key's row on the keys page."""
    row = next(r for r in re.findall(r"<tr>.*?</tr>", html, re.S) if f"<td>{key_name}</td>" in r)
    today, month = re.findall(r'<td class="number">(\d+)</td>', row)
    return int(today), int(month)


@pytest.fixture
def console(app: Any) -> Iterator[ConsoleBrowser]:
    with ConsoleBrowser(app) as browser:
        yield browser


@pytest.fixture
def team(engine: Engine) -> dict[str, Any]:
    """An organization with an owner, an admin and a member, and one key made by the owner in the console."""
    org = OrganizationStore(engine).create("Acme Foods")
    users = UserStore(engine, hashing=FAST_HASHING)
    people = {
        role: users.create(f"{role}@acme.example", role.title(), PASSWORD, [(org.id, role)])
        for role in ("owner", "admin", "member")
    }
    record, key = ApiKeyStore(engine).create("production", org_id=org.id, created_by=people["owner"].id)
    return {"org": org, "key_id": record.id, "key": key, **people}


# Signing in


def test_create_an_account_signs_up_a_new_organization_and_lands_on_its_getting_started_page(
    console: ConsoleBrowser,
) -> None:
    welcome = console.get(HOME)
    assert welcome.status_code == 200
    assert 'href="/console/sign-in?prompt=create">Create an account</a>' in welcome.text

    authorize, page = console.start("create")
    query = parse_qs(urlsplit(authorize).query)
    assert query["client_id"] == ["cli_console"] and query["code_challenge_method"] == ["S256"]
    assert query["prompt"] == ["create"] and query["nonce"][0] and query["state"][0]
    assert page.url.path == "/sign-up"

    home = console.complete(console.sign_up("cleo@example.com"))
    assert home.status_code == 200
    assert "Cleo&#39;s Kitchen</strong> (owner)" in home.text
    assert "Getting started" in home.text and "has no API key yet" in home.text
    assert f'href="{ORIGIN}/v1/ui/"' in home.text and f'href="{ORIGIN}/ui/"' in home.text  # both Swagger UIs
    assert form_with(home.text, "name").action == "/console/keys"  # an owner may create keys


def test_console_cookies_are_httponly_lax_and_scoped_to_the_console(console: ConsoleBrowser) -> None:
    started = console.get("/console/sign-in")
    assert started.headers["set-cookie"].startswith("console_sign_in=")
    assert "HttpOnly" in started.headers["set-cookie"] and "SameSite=Lax" in started.headers["set-cookie"]
    assert "Path=/console/callback" in started.headers["set-cookie"]
    assert "Secure" not in started.headers["set-cookie"]  # an http issuer on loopback
    callback = console.sign_up("dan@example.com", organization="Dan's Deli")
    done = console.get(callback.headers["location"])
    session = [c for c in done.headers.get_list("set-cookie") if c.startswith("console_session=")]
    assert len(session) == 1 and "HttpOnly" in session[0] and "SameSite=Lax" in session[0]
    assert "Path=/console;" in session[0] or session[0].endswith("Path=/console")


def test_console_pages_carry_the_security_headers(console: ConsoleBrowser) -> None:
    page = console.get(HOME)
    policy = page.headers["content-security-policy"]
    assert policy.startswith("default-src 'none'; style-src 'sha256-") and "script-src 'sha256-" in policy
    assert "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy
    assert page.headers["x-frame-options"] == "DENY" and page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["cache-control"] == "no-store" and page.headers["x-content-type-options"] == "nosniff"


def test_a_replayed_callback_is_refused(console: ConsoleBrowser) -> None:
    callback = console.sign_up("eve@example.com", organization="Eve's")
    assert console.get(callback.headers["location"]).status_code == 303
    replay = console.get(callback.headers["location"])
    assert replay.status_code == 400
    assert "not started in this browser, or it was already completed" in replay.text


def test_a_callback_carrying_another_browsers_sign_in_is_refused(app: Any, console: ConsoleBrowser) -> None:
    """Login CSRF: a callback URL made by an attacker's sign-in must not sign a victim's browser in."""
    attackers = console.sign_up("mallory@example.com", organization="Mallory Ltd")
    with ConsoleBrowser(app) as victim:
        victim.start()  # the victim has a sign-in of their own under way: its state differs
        answer = victim.get(attackers.headers["location"])
        assert answer.status_code == 400 and "console_session=" not in answer.headers.get("set-cookie", "")
        assert "Sign in" in victim.get(HOME).text  # still not signed in
    with ConsoleBrowser(app) as stranger:  # no sign-in cookie at all
        assert stranger.get(attackers.headers["location"]).status_code == 400
    assert console.get(attackers.headers["location"]).status_code == 303  # its own browser completes it


def test_a_tampered_sign_in_cookie_is_refused(console: ConsoleBrowser) -> None:
    callback = console.sign_up("tess@example.com", organization="Tess Co")
    console.http.cookies.set("console_sign_in", "gAAAAAB" + "x" * 100, domain="127.0.0.1", path="/console/callback")
    assert console.get(callback.headers["location"]).status_code == 400


def test_switch_organization_signs_in_to_the_one_chosen(engine: Engine, team: dict[str, Any], app: Any) -> None:
    other = OrganizationStore(engine).create("Beta Bakery")
    with engine.begin() as connection:
        connection.execute(
            sa.text("INSERT INTO memberships (user_id, org_id, role, joined_at) VALUES (:u, :o, 'owner', :t)"),
            {"u": team["member"].id, "o": other.id, "t": "2026-01-01 00:00:00"},
        )
    with ConsoleBrowser(app) as browser:
        home = browser.complete(browser.sign_in("member@acme.example", org_name="Acme Foods"))
        assert "Acme Foods</strong> (member)" in home.text
        assert 'href="/console/sign-in?prompt=select_account">Switch organization</a>' in home.text
        _, picker = browser.start("select_account")
        form = form_with(picker.text, "org_id")
        answer = browser.post(form.action, {**form.fields, "org_id": other.id})
        home = browser.complete(browser.follow(answer, "/console/callback"))
        assert "Beta Bakery</strong> (owner)" in home.text and "<td>production</td>" not in home.text


# Keys


def test_an_owner_creates_a_key_shown_once_that_the_menus_api_accepts_and_its_usage_counts(
    app: Any, console: ConsoleBrowser, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="regional_menus.audit")
    console.complete(console.sign_up("ana@example.com", organization="Ana's Tacos"))
    created, key = console.create_key("recipe app")
    assert created.status_code == 200 and key is not None
    assert 'readonly value="' + key + '"' in created.text  # selectable without JavaScript
    assert f"curl -H 'Authorization: Bearer {key}'" in created.text
    assert "data-copy=" in created.text

    assert menus(app, key) == 200
    assert menus(app, key) == 200
    home = console.get(HOME)
    assert key not in home.text and f"<code>{key[:8]}…</code>" in home.text  # only the prefix, ever again
    flush(app)  # (menus() ran the app's lifespan, whose shutdown flushed already: nothing is counted twice)
    home = console.get(HOME)
    assert usage_cells(home.text, "recipe app") == (2, 2)
    assert "Ana Lima" not in home.text and "Cleo Cruz" in home.text  # created by the signed-up user
    assert "never" not in home.text  # last used is set
    assert "4 requests in 30 days" not in home.text and "2 requests in 30 days" in home.text  # the chart's text
    created_events = [r.fields for r in caplog.records if getattr(r, "fields", {}).get("event") == "api_key_created"]
    assert created_events and created_events[-1]["user_id"] and created_events[-1]["org_id"]


def test_creating_a_key_redirects_to_a_page_that_shows_it_once_and_a_reload_creates_no_other(
    engine: Engine, console: ConsoleBrowser
) -> None:
    console.complete(console.sign_up("eve@example.com", organization="Eve's Eats"))
    posted = console.post("/console/keys", {"csrf_token": console.csrf(), "name": "recipe app"})
    assert posted.status_code == 303 and posted.headers["location"] == "/console/keys/new"  # POST/redirect/GET
    assert posted.headers["cache-control"] == "no-store" and key_in(posted.text) is None
    cookie = posted.headers["set-cookie"]
    assert cookie.startswith("console_new_key=") and "rmk_" not in cookie  # encrypted
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/console/keys/new" in cookie
    assert "Max-Age=120" in cookie

    shown = console.get("/console/keys/new")
    key = key_in(shown.text)
    assert shown.status_code == 200 and key is not None and "Your new API key" in shown.text
    assert shown.headers["cache-control"] == "no-store"
    cleared = shown.headers["set-cookie"]
    assert cleared.startswith("console_new_key=;") and "Max-Age=0" in cleared and "Path=/console/keys/new" in cleared

    reloaded = console.get("/console/keys/new")
    assert reloaded.status_code == 200 and key_in(reloaded.text) is None and key not in reloaded.text
    assert "This key is no longer shown" in reloaded.text and '<a class="button" href="/console/">' in reloaded.text
    assert reloaded.headers["cache-control"] == "no-store"
    org_keys = [k for k in ApiKeyStore(engine).list() if k.name == "recipe app"]
    assert len(org_keys) == 1 and org_keys[0].prefix == key[:8]  # the reload created no second key


def with_new_key_cookie(browser: ConsoleBrowser, value: str) -> ConsoleBrowser:
    """The browser, holding ``value`` as its ``console_new_key`` cookie (as if copied from another browser)."""
    browser.http.cookies.set("console_new_key", value, domain=urlsplit(ORIGIN).hostname or "", path="/console/keys/new")
    return browser


def test_the_new_key_page_refuses_a_cookie_of_another_session_a_tampered_or_an_expired_one(
    app: Any, console: ConsoleBrowser, clock: MovableClock
) -> None:
    console.complete(console.sign_up("fay@example.com", organization="Fay's Fish"))
    posted = console.post("/console/keys", {"csrf_token": console.csrf(), "name": "stolen"})
    sealed = posted.headers["set-cookie"].split(";")[0].removeprefix("console_new_key=")
    with ConsoleBrowser(app) as other:
        other.complete(other.sign_up("gus@example.com", organization="Gus's Grill"))
        page = with_new_key_cookie(other, sealed).get("/console/keys/new")
        assert page.status_code == 200 and key_in(page.text) is None and "no longer shown" in page.text
    with ConsoleBrowser(app) as anonymous:
        away = with_new_key_cookie(anonymous, sealed).get("/console/keys/new")
        assert away.status_code == 303 and away.headers["location"] == HOME and key_in(away.text) is None
    tampered = sealed[:-4] + ("AAAA" if not sealed.endswith("AAAA") else "BBBB")
    page = with_new_key_cookie(console, tampered).get("/console/keys/new")
    assert key_in(page.text) is None and "no longer shown" in page.text
    clock.advance(DEFAULTS.console_new_key_ttl + 1)  # the app's clock: two minutes later
    page = with_new_key_cookie(console, sealed).get("/console/keys/new")
    assert key_in(page.text) is None and "no longer shown" in page.text


def test_the_demo_key_belongs_to_the_demo_organization_and_shows_in_the_demo_users_console(
    engine: Engine, settings: Settings, console: ConsoleBrowser
) -> None:
    from service.cli import demo

    first, second = demo.prepare(engine, settings), demo.prepare(engine, settings)
    keys = ApiKeyStore(engine)
    key_id = keys.authenticate(second.api_key)
    assert key_id is not None and keys.authenticate(first.api_key) is None
    record = keys.get(key_id)
    assert (record.org_id, record.created_by) == (second.org_id, second.user_id)
    home = console.complete(console.sign_in(demo.USER_EMAIL, password=demo.USER_PASSWORD))
    assert "Demo Kitchen</strong> (owner)" in home.text
    rows = [r for r in re.findall(r"<tr>.*?</tr>", home.text, re.S) if "<td>demo</td>" in r]
    states = sorted(re.findall(r"<td>(active|revoked)</td>", "".join(rows)))
    assert states == ["active", "revoked"]  # this start's key, and the previous start's, revoked
    assert f"<code>{second.api_key[:8]}…</code>" in home.text and f"<code>{first.api_key[:8]}…</code>" in home.text
    assert demo.USER_NAME in rows[0]  # created by the demo user


def test_revoking_asks_first_then_takes_effect_at_once_and_is_audited(
    app: Any, console: ConsoleBrowser, team: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="regional_menus.audit")
    home = console.complete(console.sign_in("admin@acme.example"))
    revoke_link = f"/console/keys/{team['key_id']}/revoke"
    assert f'href="{revoke_link}"' in home.text
    confirm = console.get(revoke_link)
    assert confirm.status_code == 200 and "Revoke this key?" in confirm.text
    assert menus(app, team["key"]) == 200  # nothing happens before confirming
    (form,) = [f for f in forms(confirm.text) if f.action.endswith("/revoke")]
    done = console.post(form.action, form.fields)
    assert done.status_code == 303 and done.headers["location"] == HOME
    assert menus(app, team["key"]) == 401
    assert ">revoked</td>" in console.get(HOME).text
    revoked = [r.fields for r in caplog.records if getattr(r, "fields", {}).get("event") == "api_key_revoked"]
    assert revoked[-1] == {
        "event": "api_key_revoked",
        "outcome": "success",
        "key_id": team["key_id"],
        "org_id": team["org"].id,
        "user_id": team["admin"].id,
    }


def test_a_member_sees_the_keys_without_buttons_and_is_refused_by_page_and_by_post(
    app: Any, team: dict[str, Any]
) -> None:
    with ConsoleBrowser(app) as member:
        home = member.complete(member.sign_in("member@acme.example"))
        assert "<td>production</td>" in home.text and "Owner" in home.text  # the list, with who made each key
        assert "/revoke" not in home.text and 'action="/console/keys"' not in home.text  # no buttons
        token = member.csrf()
        created = member.post("/console/keys", {"csrf_token": token, "name": "mine"})
        assert created.status_code == 403 and "Only an owner or an admin" in created.text
        assert member.get(f"/console/keys/{team['key_id']}/revoke").status_code == 403
        revoked = member.post(f"/console/keys/{team['key_id']}/revoke", {"csrf_token": token})
        assert revoked.status_code == 403
    assert menus(app, team["key"]) == 200
    assert "mine" not in [k.name for k in ApiKeyStore_of(app).list()]


def ApiKeyStore_of(app: Any) -> ApiKeyStore:  # noqa: N802
    return ApiKeyStore(app.engine)


def test_a_key_of_another_organization_or_of_none_is_unknown_here(
    engine: Engine, console: ConsoleBrowser, team: dict[str, Any], app: Any
) -> None:
    console.complete(console.sign_up("zoe@example.com", organization="Zoe's"))
    token = console.csrf()
    orphan, orphan_key = ApiKeyStore(engine).create("made at the command line")
    for key_id in (team["key_id"], orphan.id, "key_0000000000000000"):
        assert console.get(f"/console/keys/{key_id}/revoke").status_code == 404
        assert console.post(f"/console/keys/{key_id}/revoke", {"csrf_token": token}).status_code == 404
    assert menus(app, team["key"]) == 200 and menus(app, orphan_key) == 200
    assert "<td>production</td>" not in console.get(HOME).text


def test_forms_without_or_with_a_wrong_csrf_token_are_refused(app: Any, console: ConsoleBrowser) -> None:
    console.complete(console.sign_up("finn@example.com", organization="Finn's"))
    assert console.post("/console/keys", {"name": "x"}).status_code == 400  # missing: the contract requires it
    wrong = console.post("/console/keys", {"name": "x", "csrf_token": "forged"})
    assert wrong.status_code == 403 and "Form expired" in wrong.text
    assert console.post("/console/sign-out", {"csrf_token": "forged"}).status_code == 403
    with ConsoleBrowser(app) as other:  # another session's token is just as wrong
        other.complete(other.sign_up("gus@example.com", organization="Gus's"))
        assert console.post("/console/keys", {"name": "x", "csrf_token": other.csrf()}).status_code == 403
    assert "Getting started" in console.get(HOME).text  # no key was made


def test_bad_form_input_gets_an_html_page_with_the_documented_status(console: ConsoleBrowser) -> None:
    console.complete(console.sign_up("hal@example.com", organization="Hal's"))
    token = console.csrf()
    blank = console.post("/console/keys", {"name": "   ", "csrf_token": token})
    assert blank.status_code == 400 and "1 to 200 characters" in blank.text
    long = console.post("/console/keys", {"name": "x" * 201, "csrf_token": token})
    assert long.status_code == 400 and long.headers["content-type"].startswith("text/html")
    unknown = console.post("/console/keys", {"name": "x", "csrf_token": token, "extra": "1"})
    assert unknown.status_code == 400
    huge = console.post("/console/keys", {"name": "x", "csrf_token": token, "pad": "y" * 20_000})
    assert huge.status_code == 413
    assert console.get("/console/keys/not-a-key/revoke").status_code == 400
    assert console.get("/console/sign-in?prompt=none").status_code == 400  # create, select_account or login only
    assert console.get("/console/nowhere").status_code == 404


def test_a_key_past_the_organizations_cap_is_refused_with_409_and_says_why(settings: Settings, engine: Engine) -> None:
    with ConsoleBrowser(make_app(settings.with_changes(max_keys_per_org=1))) as console:
        console.complete(console.sign_up("max@example.com", organization="Max Kitchen"))
        assert console.create_key("first")[1] is not None
        refused = console.post("/console/keys", {"name": "second", "csrf_token": console.csrf()})
        assert refused.status_code == 409 and refused.headers["content-type"].startswith("text/html")
        assert "Max Kitchen has 1 active API keys, the most an organization may have" in refused.text
        home = console.get(HOME).text
        assert "<td>first</td>" in home and "<td>second</td>" not in home  # nothing was created


def test_a_form_posted_without_a_console_session_goes_home(console: ConsoleBrowser) -> None:
    answer = console.post("/console/keys", {"name": "x", "csrf_token": "t"})
    assert answer.status_code == 303 and answer.headers["location"] == HOME


def test_sign_out_ends_the_console_session_and_the_providers_session(console: ConsoleBrowser) -> None:
    console.complete(console.sign_up("ivy@example.com", organization="Ivy's"))
    out = console.post("/console/sign-out", {"csrf_token": console.csrf()})
    assert out.status_code == 303
    end_session = urlsplit(out.headers["location"])
    assert end_session.path == "/oauth2/end-session"
    assert parse_qs(end_session.query)["post_logout_redirect_uri"] == [f"{ORIGIN}/console/"]
    back = console.get(out.headers["location"])
    assert back.status_code == 302 and back.headers["location"] == f"{ORIGIN}/console/"
    assert "Create an account" in console.get(HOME).text  # signed out of the console
    _, page = console.start()
    assert page.url.path == "/sign-in"  # and of the provider: credentials are asked again


def test_a_copied_console_cookie_opens_nothing_after_sign_out_on_any_node(
    settings: Settings, console: ConsoleBrowser
) -> None:
    """The console session lives on the server: signing out ends it there, whatever the provider's session does."""
    console.complete(console.sign_up("kim@example.com", organization="Kim's"))
    copied = {"Cookie": f"console_session={console.http.cookies['console_session']}"}
    with TestClient(make_app(settings), base_url=ORIGIN, follow_redirects=False) as other_node:
        assert "Sign out" in other_node.get(HOME, headers=copied).text  # the cookie works on every node
        assert console.post("/console/sign-out", {"csrf_token": console.csrf()}).status_code == 303
        # the end-session redirect is not followed: the provider's session lives on
        for node in (console.http, other_node):
            page = node.get(HOME, headers=copied)
            assert page.status_code == 200 and "Create an account" in page.text
            assert node.post("/console/keys", data={"name": "x", "csrf_token": "t"}, headers=copied).status_code == 303


def test_signing_out_of_the_provider_elsewhere_ends_the_console_session(app: Any, console: ConsoleBrowser) -> None:
    console.complete(console.sign_up("jo@example.com", organization="Jo's"))
    ended = console.get("/oauth2/end-session")  # another application signs the user out: the provider asks first
    form = form_with(ended.text, "csrf_token")
    assert console.post(form.action, {**form.fields, "confirm": "yes"}).status_code == 200
    assert "Create an account" in console.get(HOME).text


# Usage counting


def test_ten_thousand_menus_requests_cause_a_handful_of_usage_writes(settings: Settings, engine: Engine) -> None:
    """Counted in memory, flushed every second here (and at shutdown): the writes do not grow with requests."""
    org = OrganizationStore(engine).create("Busy")
    _, key = ApiKeyStore(engine).create("busy", org_id=org.id)
    app = make_app(settings.with_changes(usage_flush_interval=1))
    writes: list[str] = []

    def spy(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "api_key_usage" in statement or "last_used_at=" in statement.replace(" ", ""):
            writes.append(statement.split()[0])

    sa.event.listen(Engine, "before_cursor_execute", spy)
    try:
        seconds = asyncio.run(_requests(app, key, 10_000))
    finally:
        sa.event.remove(Engine, "before_cursor_execute", spy)
    with engine.connect() as connection:
        counted = connection.scalar(sa.text("SELECT SUM(requests) FROM api_key_usage"))
    assert counted == 10_000
    changes = [w for w in writes if w in ("INSERT", "UPDATE")]
    # One upsert and at most one last-used update per flush; a flush a second, and one at shutdown.
    assert len(changes) <= 2 * (int(seconds) + 2), (len(changes), seconds)
    print(f"\n10,000 menus requests in {seconds:.1f} s: {len(changes)} usage writes ({len(writes)} statements)")


async def _requests(app: Any, key: str, n: int) -> float:
    """``n`` GETs straight through the ASGI app, inside its lifespan (startup, the periodic flush, shutdown)."""
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await inbox.put({"type": "lifespan.startup"})
    lifespan = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}}, inbox.get, outbox.put))
    assert (await outbox.get())["type"] == "lifespan.startup.complete"
    headers = [(b"authorization", f"Bearer {key}".encode()), (b"host", b"127.0.0.1:8000")]
    statuses: list[int] = []
    started = loop.time()
    for _ in range(n):
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
            "path": "/v1/menus/regions", "raw_path": b"/v1/menus/regions", "query_string": b"", "root_path": "",
            "headers": headers, "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000),
        }  # fmt: skip

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        await app(scope, receive, send)
        await asyncio.sleep(0)  # as a server does between requests: the periodic flush gets its turn
    seconds = loop.time() - started
    await inbox.put({"type": "lifespan.shutdown"})
    assert (await outbox.get())["type"] == "lifespan.shutdown.complete"
    await lifespan
    assert statuses.count(200) == n - statuses.count(429)
    return seconds


def test_usage_counts_by_status_class_and_survives_a_failed_flush(engine: Engine, tmp_path: Path) -> None:
    org = OrganizationStore(engine).create("Counted")
    record, _ = ApiKeyStore(engine).create("k", org_id=org.id)
    counter = UsageCounter(engine, LAST_USED_RESOLUTION)
    for status in (200, 304, 404, 429, 500, 503):
        counter.count(record.id, status)
    broken = UsageCounter(
        make_engine(f"sqlite:///{tmp_path / 'no-tables.sqlite3'}", POOL), LAST_USED_RESOLUTION
    )  # every write fails
    broken._counts, broken._seen = counter._counts.copy(), dict(counter._seen)
    with pytest.raises(sa.exc.DBAPIError):
        broken.flush()
    assert broken.pending() == 6  # put back for the next flush
    assert counter.flush() == 2  # one upsert, one last-used update
    assert counter.flush() == 0  # nothing new: no write at all
    with engine.connect() as connection:
        rows = dict(connection.execute(sa.text("SELECT status_class, requests FROM api_key_usage")).all())
    assert rows == {2: 1, 3: 1, 4: 2, 5: 2}


# Two nodes on one database


@pytest.fixture
def shared_database(either_database: str) -> str:
    engine = make_engine(either_database, POOL)
    upgrade(engine)
    engine.dispose()
    return either_database


def test_two_nodes_share_the_console_client_sessions_and_revocations(shared_database: str) -> None:
    settings = Settings(database_url=shared_database, validate_responses=True, purge_interval=0)
    clock_b = MovableClock()  # node B's time, moved past the revocation bound below
    node_a, node_b = (
        make_app(settings),
        make_app(settings, clock=clock_b),
    )  # both register the console: one client
    engine = make_engine(shared_database, POOL)
    try:
        with engine.connect() as connection:
            assert connection.scalar(sa.text("SELECT COUNT(*) FROM clients WHERE id = 'cli_console'")) == 1
        with ConsoleBrowser(node_a) as on_a, ConsoleBrowser(node_b) as on_b:
            callback = on_a.sign_up("kai@example.com", organization="Kai's")
            on_b.http.cookies = on_a.http.cookies  # the load balancer sends the callback to node B
            home = on_b.complete(callback)  # B redeems the code of A's client and reads A's cookie
            assert "Kai&#39;s</strong> (owner)" in home.text
            on_a.http.cookies = on_b.http.cookies  # and the next requests to node A, with node B's session cookie
            _, key = on_a.create_key("shared")
            assert key is not None and menus(node_b, key) == 200
            key_id = re.search(r'href="/console/keys/(key_[0-9a-f]+)/revoke"', on_b.get(HOME).text)
            assert key_id is not None
            done = on_a.post(f"/console/keys/{key_id.group(1)}/revoke", {"csrf_token": on_a.csrf()})
            assert done.status_code == 303
            assert menus(node_a, key) == 401  # refused at once by the node that revoked it
            clock_b.advance(KEY_REVOCATION_BOUND)
            assert menus(node_b, key) == 401  # and by the other within the revocation bound
    finally:
        engine.dispose()


def test_serve_demo_prints_the_console_url(engine: Engine, settings: Settings) -> None:
    from service.cli.demo import prepare

    assert f"Console: {settings.base_url}/console/" in prepare(engine, settings).instructions


def test_without_a_safe_redirect_uri_the_service_runs_without_its_console(
    settings: Settings, engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(settings.with_changes(base_url="http://menus.internal"))
    assert "the developer console is off" in caplog.text
    with TestClient(app) as client:
        assert client.get("/console/").status_code == 404
        assert client.get("/v1/menus/regions").status_code == 401  # the rest of the service runs
