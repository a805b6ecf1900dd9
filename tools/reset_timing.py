"""How long "Forgot your password?" takes to answer for an address with an account and for one without, against a
real server: the two medians should be the same (the answers are), or the timing tells who has an account.

The service runs as users run it (``serve``; SQLite in a temporary folder unless ``--database-url`` names another,
such as a throw-away PostgreSQL database). ``--accounts`` users are made; each round posts the forgot-password form
of a pending sign-in once with the address of an account (each account at most its 5 mails a window, so that every
known address is mailed) and once with an unknown address, in turn, each post from a network of its own
(``X-Forwarded-For`` from a trusted proxy: the per-network bound of 20 in 15 minutes never answers 429 here). The
mail worker polls once an hour, so that no mail is written during the rounds. The clock runs from the POST to its
answer, as the person typing (or an attacker) sees it.

    python -m tools.reset_timing                       # 100 rounds, 20 accounts, SQLite
    python -m tools.reset_timing --rounds 200 --accounts 40 --database-url postgresql+psycopg://…/db
"""

from __future__ import annotations

import argparse
import re
import secrets
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from identity.accounts.users import UserStore
from service.database.db import make_engine
from service.settings import Settings
from tests.support.live import LiveService, live_service
from tests.support.pkce_pairs import pkce_pair

REDIRECT_URI = "http://127.0.0.1:9/callback"  # never contacted
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')
PASSWORD = "a long enough kitchen password"
MAILS_PER_ACCOUNT = 5  # the per-account bound of reset mails in a window (docs/identity.md)


def forgot_password_form(browser: httpx.Client, client_id: str) -> dict[str, str]:
    """A pending sign-in's forgot-password form: its hidden fields (interaction, CSRF token)."""
    _, challenge = pkce_pair()
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "scope": "openid",
        "state": "s",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    sign_in = browser.get("/oauth2/authorize", params=params).headers["location"]
    interaction = sign_in.split("interaction=", 1)[1]
    return dict(HIDDEN.findall(browser.get("/forgot-password", params={"interaction": interaction}).text))


def timed_post(browser: httpx.Client, form: dict[str, str], email: str, network: int) -> float:
    forwarded = {"X-Forwarded-For": f"10.{network // 250}.{network % 250}.7"}
    started = time.perf_counter()
    answer = browser.post("/forgot-password", data={**form, "email": email}, headers=forwarded)
    seconds = time.perf_counter() - started
    assert answer.status_code == 200 and "If an account" in answer.text, (answer.status_code, answer.text[:300])
    return seconds


def measure(service: LiveService, client_id: str, accounts: list[str], rounds: int) -> tuple[list[float], list[float]]:
    known: list[float] = []
    unknown: list[float] = []
    with httpx.Client(base_url=service.url, follow_redirects=False, timeout=30) as browser:
        form = forgot_password_form(browser, client_id)
        for warm in range(5):  # the first requests load templates and warm the pool: not counted
            timed_post(browser, form, f"warm{warm}@example.com", 10_000 + warm)
        for n in range(rounds):
            known.append(timed_post(browser, form, accounts[n % len(accounts)], 2 * n))
            unknown.append(timed_post(browser, form, f"nobody-{secrets.token_hex(6)}@example.com", 2 * n + 1))
    return known, unknown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--accounts", type=int, default=20)
    parser.add_argument("--database-url", default=None, help="the state database (default: SQLite in a temp folder)")
    options = parser.parse_args()
    if options.rounds > options.accounts * MAILS_PER_ACCOUNT:
        parser.error(f"--rounds may be at most {MAILS_PER_ACCOUNT} x --accounts: every known address must be mailed")
    env = {"MENUS_TRUSTED_PROXIES": "127.0.0.1", "MENUS_MAIL_POLL_INTERVAL": "3600"}
    if options.database_url:
        env["MENUS_DATABASE_URL"] = options.database_url
    with tempfile.TemporaryDirectory() as folder, live_service(Path(folder), env) as service:
        org = service.cli_json("orgs", "create", "--name", "Timing Foods")
        client = service.cli_json(
            "clients", "create", "--name", "Timing App", "--org", org["id"], "--first-party",
            "--redirect-uri", REDIRECT_URI, "--auth-method", "client_secret_basic",
        )  # fmt: skip
        database_url = options.database_url or f"sqlite:///{Path(folder) / 'var' / 'regional-menus.sqlite3'}"
        engine = make_engine(database_url, Settings().database_pool())
        users = UserStore(engine)
        accounts = [f"timing{n}-{secrets.token_hex(4)}@example.com" for n in range(options.accounts)]
        for n, email in enumerate(accounts):
            users.create(email, f"Timing Cook {n}", PASSWORD, [(org["id"], "member")])
        engine.dispose()
        known, unknown = measure(service, client["client_id"], accounts, options.rounds)
    for name, times in (("an account", known), ("no account", unknown)):
        ms = sorted(t * 1000 for t in times)
        print(
            f"forgot-password POST, address with {name}, {len(ms)} posts: median {statistics.median(ms):.2f} ms, "
            f"p10 {ms[len(ms) // 10]:.2f} ms, p90 {ms[len(ms) * 9 // 10]:.2f} ms"
        )
    print(f"difference of the medians: {(statistics.median(known) - statistics.median(unknown)) * 1000:+.2f} ms")


if __name__ == "__main__":
    main()
