"""Races fired at two nodes at once, and what each side was left with afterwards.

Two nodes (``regional-menus serve``) share one PostgreSQL database, as two nodes behind a load balancer do; on
SQLite one node takes both sides (two threads, two connections). An attempt prepares both requests first (the
pages fetched, their forms read, the connections open), then two threads meet at a ``threading.Barrier`` and
one of them waits an offset drawn from 0–20 ms (``SPANS``, ``SIGN_INS``) before it fires. What came back, and what
still works afterwards
(the code, the tokens, the browser's session, the consent), is sorted into an outcome; an outcome that breaks a
promise of docs/identity.md is a violation.

``tests/system/test_races.py`` runs a few attempts of each race in CI and asserts that no attempt breaks its
rule; ``python -m bench --only races`` runs the full counts and prints every outcome (docs/performance.md).

The races:

- ``reset``: a password reset by the mailed link (node B) against a sign-in with the old password (node A);
- ``console``: the console's password change (node B) against a sign-in with the old password (node A);
- ``disable``: ``users disable`` (this process, as the command does it) against a sign-in (node A);
- ``consent-twice``: one consent form posted twice at once, to A and to B;
- ``consent-scopes``: two consents of one user to one client, for different scopes, at once on A and B;
- ``renewal``: a sign-in again (``prompt=login``, node A) against a sign-out at the end-session endpoint (node B).
"""

from __future__ import annotations

import itertools
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import requests
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.accounts.disabled_users import disable
from identity.accounts.organizations import OrganizationStore
from identity.accounts.users import UserStore
from identity.clients.registry import ClientStore
from identity.common.tables import browser_sessions
from identity.keys.sealing import new_key
from identity.tokens.revoked_grants import Revoker
from service.database.db import make_engine
from tests.support.defaults import POOL
from tests.support.form_browser import FormParser
from tests.support.live import REDIRECT_URI, LiveService, free_port, live_service
from tests.support.pkce_pairs import pkce_pair
from tests.support.postgres import throwaway_database
from tests.support.smtp import SmtpServer

OLD_PASSWORD = "the old kitchen password"
NEW_PASSWORD = "a new kitchen password"
# How long after the other one side may fire, at most (either side, drawn from 0 to this): 20 ms where both sides
# spend about as long before they reach the database (the reset hashes the new password as the sign-in checks the
# old one; two consent forms). Where one side first spends the time of an Argon2 check and the other does not (a
# disable, a sign-out), or twice that time against once (the console's change checks the current password and
# hashes the new one), the span is a multiple of a sign-in's time on these nodes, measured at the start
# (``Deployment.sign_in_seconds``): the other side then lands in the window where a session is about to start as
# often as around it, whatever the machine's speed.
SPANS = {"reset": 0.020, "consent-twice": 0.020, "consent-scopes": 0.020}
SIGN_INS = {"console": 2.2, "disable": 1.5, "renewal": 1.5}  # the span in sign-in times
TIMEOUT = 30
SIGNED_OUT = "You have signed out of every application."
T = TypeVar("T")
U = TypeVar("U")


@dataclass(frozen=True)
class Registered:
    id: str
    secret: str

    @property
    def basic(self) -> tuple[str, str]:
        return (self.id, self.secret)


@dataclass
class Deployment:
    """The nodes under race, their shared database (this process reads and writes it as the commands do), the
    SMTP server their mail goes to, and the clients the races use."""

    engine_name: str  # sqlite or postgresql
    a: LiveService
    b: LiveService  # the same node as ``a`` on SQLite
    database: Engine
    smtp: SmtpServer
    org_id: str
    app: Registered  # first-party: no consent; code and refresh grants
    third_party: Registered  # asks for consent
    sign_in_seconds: float = 0.0  # a sign-in's time through the pages (median of three), once measured
    _numbers: Iterator[int] = field(default_factory=itertools.count)

    def span(self, race: str) -> float:
        """The longest offset of ``race``'s two sides, in seconds (``SPANS``, ``SIGN_INS``)."""
        return SPANS[race] if race in SPANS else SIGN_INS[race] * self.sign_in_seconds

    def person(self) -> Person:
        """A new user (password ``OLD_PASSWORD``) and a browser of their own, from an address of its own (so no
        attempt counts against another's sign-in bound)."""
        number = next(self._numbers)
        email = f"racer-{number}@example.com"
        user = UserStore(self.database).create(email, f"Racer {number}", OLD_PASSWORD, [(self.org_id, "member")])
        return Person(self, user.id, email, f"198.18.{number // 250}.{number % 250 + 1}")


class Person:
    """A user and the browsers acting for them; each browser is a ``requests.Session`` of its own (a session is
    used by one thread at a time), from the person's address (``X-Forwarded-For``, a trusted proxy's)."""

    def __init__(self, deployment: Deployment, user_id: str, email: str, address: str) -> None:
        self.deployment = deployment
        self.user_id = user_id
        self.email = email
        self.address = address
        self.http = self.browser()

    def sign_in(self, fields: dict[str, str], http: requests.Session | None = None) -> requests.Response:
        """Post the sign-in page's form (``fields``) to node A with the old password, from ``http`` (the person's
        browser unless given)."""
        form = {**fields, "email": self.email, "password": OLD_PASSWORD}
        return post(http or self.http, self.deployment.a, "/sign-in", form)

    def browser(self, like: requests.Session | None = None) -> requests.Session:
        """A new browser; ``like``: with that browser's cookies (the same browser, in a second tab)."""
        http = requests.Session()
        http.headers["X-Forwarded-For"] = self.address
        if like is not None:
            http.cookies.update(like.cookies)
        return http


Outcome = str  # what one attempt came to; one that starts with VIOLATION breaks the race's rule


@dataclass
class Tally:
    race: str
    engine_name: str
    attempts: int = 0
    outcomes: Counter[Outcome] = field(default_factory=Counter)

    @property
    def violations(self) -> int:
        return sum(count for outcome, count in self.outcomes.items() if outcome.startswith("VIOLATION"))

    span: float = 0.0  # seconds: the longest offset between the two sides

    def line(self) -> str:
        found = "; ".join(f"{count} {outcome}" for outcome, count in sorted(self.outcomes.items()))
        return (
            f"{self.engine_name}: {self.race}: {self.attempts} attempts, offsets 0-{self.span * 1000:.0f} ms: {found}"
        )


# Deployments


@contextmanager
def deployment(engine_name: str, folder: Path) -> Iterator[Deployment]:
    """Two nodes on one throw-away PostgreSQL database, or one node on SQLite; an SMTP server on loopback."""
    smtp = SmtpServer()
    smtp.start()
    with ExitStack() as stack:
        stack.callback(smtp.stop)
        port_a = free_port()
        issuer = f"http://127.0.0.1:{port_a}"
        env = {
            "MENUS_ISSUER": issuer,  # both nodes are one issuer (A's address stands for the load balancer's)
            "MENUS_BASE_URL": issuer,
            "MENUS_SECRET_KEYS": new_key(),
            "MENUS_SMTP_URL": smtp.url,
            "MENUS_MAIL_POLL_INTERVAL": "1",
            "MENUS_TRUSTED_PROXIES": "127.0.0.1",  # each person's address comes in X-Forwarded-For
        }
        if engine_name == "postgresql":
            url = stack.enter_context(throwaway_database())
            env["MENUS_DATABASE_URL"] = url
            a = stack.enter_context(live_service(folder / "node-a", env, port=port_a))
            b = stack.enter_context(live_service(folder / "node-b", env))
        else:
            url = f"sqlite:///{folder / 'node-a' / 'var' / 'regional-menus.sqlite3'}"
            a = b = stack.enter_context(live_service(folder / "node-a", env, port=port_a))
        database = make_engine(url, POOL)
        stack.callback(database.dispose)
        org = OrganizationStore(database).create("Race Kitchen")  # made here, as the commands would (no process)
        found = Deployment(
            engine_name,
            a,
            b,
            database,
            smtp,
            org.id,
            _client(database, org.id, "Race App", ["refresh_token"], ["offline_access"], first_party=True),
            _client(database, org.id, "Race Third Party", [], ["profile", "email"], first_party=False),
        )
        found.sign_in_seconds = sign_in_time(found)
        yield found


def sign_in_time(deployment: Deployment) -> float:
    """The median time of three sign-ins through the pages, from the post of the form to the answer with a code."""
    person = deployment.person()
    times = []
    for _ in range(3):
        http = person.browser()  # a new browser each time: a first sign-in, not a renewal
        fields, _ = sign_in_fields(person, http, deployment.app)
        started = time.perf_counter()
        answer = person.sign_in(fields, http)
        times.append(time.perf_counter() - started)
        assert code_of(answer) is not None, answer.text
    return sorted(times)[1]


def _client(
    database: Engine, org_id: str, name: str, grants: list[str], scopes: list[str], *, first_party: bool
) -> Registered:
    client, secret = ClientStore(database).create(
        name=name,
        org_id=org_id,
        auth_method="client_secret_basic",
        redirect_uris=[REDIRECT_URI],
        grants=["authorization_code", *grants],
        scopes=["openid", *scopes],
        first_party=first_party,
    )
    assert secret is not None
    return Registered(client.id, secret)


def folder_for(base: Path, engine_name: str) -> Path:
    folder = base / engine_name
    (folder / "node-a").mkdir(parents=True)
    (folder / "node-b").mkdir()
    return folder


# Firing


def at_once(first: Callable[[], T], second: Callable[[], U], rng: random.Random, longest: float) -> tuple[T, U]:
    """Call both at the same instant from two threads, one of them (either) ``0``–``longest`` seconds later."""
    barrier = threading.Barrier(2)
    delays = [0.0, rng.uniform(0, longest)]
    rng.shuffle(delays)
    results: list[Any] = [None, None]
    errors: list[BaseException | None] = [None, None]

    def side(index: int, call: Callable[[], Any]) -> None:
        barrier.wait(timeout=TIMEOUT)
        started = time.perf_counter()
        while time.perf_counter() - started < delays[index]:  # a busy wait: sleep() would round up to the tick
            pass
        try:
            results[index] = call()
        except BaseException as error:  # noqa: BLE001 - raised again in the calling thread
            errors[index] = error

    threads = [threading.Thread(target=side, args=(index, call)) for index, call in enumerate((first, second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=2 * TIMEOUT)
    for error in errors:
        if error is not None:
            raise error
    return results[0], results[1]


def run(race: str, deployment: Deployment, attempts: int, seed: int = 42) -> Tally:
    """``attempts`` attempts of ``race``; the outcomes counted."""
    rng = random.Random(f"{seed}-{race}")
    tally = Tally(race, deployment.engine_name, span=deployment.span(race))
    for outcome in RACES[race](deployment, attempts, rng):
        tally.attempts += 1
        tally.outcomes[outcome] += 1
    return tally


# The pages, as a browser uses them


def form_of(response: requests.Response) -> dict[str, str]:
    """The hidden and filled fields of the page's one form (or of the first, when there are several)."""
    parser = FormParser()
    parser.feed(response.text)
    assert parser.forms, response.text
    return dict(parser.forms[0].fields)


def authorize(
    person: Person, http: requests.Session, client: Registered, scope: str = "openid", **extra: str
) -> tuple[requests.Response, str]:
    """The authorization request on node A (not followed) and the PKCE verifier of its code."""
    verifier, challenge = pkce_pair()
    query = {"response_type": "code", "client_id": client.id, "redirect_uri": REDIRECT_URI, "scope": scope,
             "state": "s", "code_challenge": challenge, "code_challenge_method": "S256", **extra}  # fmt: skip
    node = person.deployment.a
    answer = http.get(f"{node.url}/oauth2/authorize?{urlencode(query)}", allow_redirects=False, timeout=TIMEOUT)
    return answer, verifier


def page(http: requests.Session, answer: requests.Response, path: str) -> requests.Response:
    """Follow ``answer``'s redirect to the provider's page ``path``."""
    assert answer.status_code == 302 and urlsplit(answer.headers["Location"]).path == path, (
        answer.status_code,
        answer.headers.get("Location"),
        answer.text,
    )
    shown = http.get(urljoin(answer.url, answer.headers["Location"]), timeout=TIMEOUT)
    assert shown.status_code == 200, shown.text
    return shown


def sign_in_fields(
    person: Person, http: requests.Session, client: Registered, **extra: str
) -> tuple[dict[str, str], str]:
    """The sign-in page of a new authorization request: its form's fields, and the code's PKCE verifier."""
    answer, verifier = authorize(person, http, client, **extra)
    return form_of(page(http, answer, "/sign-in")), verifier


def post(http: requests.Session, node: LiveService, path: str, fields: dict[str, str]) -> requests.Response:
    return http.post(f"{node.url}{path}", data=fields, allow_redirects=False, timeout=TIMEOUT)


def code_of(answer: requests.Response) -> str | None:
    """The code of an answer that sends the browser back to the client with one."""
    if answer.status_code != 302 or not answer.headers["Location"].startswith(REDIRECT_URI):
        return None
    return parse_qs(urlsplit(answer.headers["Location"]).query).get("code", [None])[0]


def error_of(answer: requests.Response) -> str | None:
    if answer.status_code != 302 or not answer.headers["Location"].startswith(REDIRECT_URI):
        return None
    return parse_qs(urlsplit(answer.headers["Location"]).query).get("error", [None])[0]


def signed_in(person: Person, http: requests.Session, client: Registered, **extra: str) -> tuple[str, str]:
    """Sign in through the pages until the client gets a code: the code and its verifier."""
    fields, verifier = sign_in_fields(person, http, client, **extra)
    answer = person.sign_in(fields, http)
    code = code_of(answer)
    assert code is not None, (answer.status_code, answer.headers.get("Location"), answer.text)
    return code, verifier


def redeem(deployment: Deployment, client: Registered, code: str, verifier: str) -> requests.Response:
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI, "code_verifier": verifier}
    return requests.post(f"{deployment.b.url}/oauth2/token", data=form, auth=client.basic, timeout=TIMEOUT)


def server_error(*answers: requests.Response) -> str | None:
    statuses = [str(answer.status_code) for answer in answers if answer.status_code >= 500]
    return f"VIOLATION: answered {', '.join(statuses)}" if statuses else None


# What a sign-in left behind


def what_lives(person: Person, sign_in: requests.Response, verifier: str) -> list[str]:
    """What still works of a sign-in after the race: its code, the tokens of its code, the browser's session."""
    deployment, app = person.deployment, person.deployment.app
    alive = []
    code = code_of(sign_in)
    if code is not None:
        issued = redeem(deployment, app, code, verifier)
        if issued.status_code == 200:
            tokens = issued.json()
            introspected = requests.post(
                f"{deployment.a.url}/oauth2/introspect", data={"token": tokens["access_token"]},
                auth=app.basic, timeout=TIMEOUT,
            )  # fmt: skip
            if introspected.json().get("active"):
                alive.append("access token active")
            userinfo = requests.get(
                f"{deployment.b.url}/oauth2/userinfo",
                headers={"Authorization": f"Bearer {tokens['access_token']}"},
                timeout=TIMEOUT,
            )
            if userinfo.status_code == 200:
                alive.append("userinfo answered")
            if "refresh_token" in tokens:
                refreshed = requests.post(
                    f"{deployment.a.url}/oauth2/token",
                    data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]},
                    auth=app.basic,
                    timeout=TIMEOUT,
                )
                if refreshed.status_code == 200:
                    alive.append("refresh worked")
    quiet, _ = authorize(person, person.http, app, scope="openid", prompt="none")
    if code_of(quiet) is not None:
        alive.append("prompt=none signed in")
    return alive


def after_credential_change(changed: bool, sign_in: requests.Response, alive: list[str], what: str) -> Outcome:
    """The outcome of a sign-in with the old credential raced by ``what`` (which ``changed`` or not)."""
    if sign_in.status_code >= 500:
        return f"VIOLATION: the sign-in answered {sign_in.status_code}"
    if not changed:
        return f"{what} refused"
    if alive:
        return f"VIOLATION: {what} done, the old password's sign-in lives on ({', '.join(alive)})"
    if code_of(sign_in) is not None:
        return f"{what} done; the sign-in got a code, then nothing of it worked"
    if sign_in.status_code == 200:
        return f"{what} done; the sign-in was refused"
    return f"{what} done; the sign-in answered {sign_in.status_code}"


# The races


def reset_against_sign_in(deployment: Deployment, attempts: int, rng: random.Random) -> Iterator[Outcome]:
    """A reset by the mailed link (node B) against a sign-in with the old password (node A). The rule
    (docs/identity.md, RFC 9700 §4.14): once the reset has answered "Password changed", nothing that the old
    password started works, whichever came first."""
    prepared = []
    for _ in range(attempts):  # every link asked for first: the mails then arrive together
        person = deployment.person()
        fields, verifier = sign_in_fields(person, person.http, deployment.app)
        forgot = person.http.get(
            f"{deployment.a.url}/forgot-password", params={"interaction": fields["interaction"]}, timeout=TIMEOUT
        )
        asked = post(person.http, deployment.a, "/forgot-password", {**form_of(forgot), "email": person.email})
        assert asked.status_code == 200, asked.text
        prepared.append((person, fields, verifier))
    links = reset_links(deployment.smtp, [person.email for person, _, _ in prepared])
    for person, fields, verifier in prepared:
        mailbox = person.browser()
        reset_form = mailbox.get(f"{deployment.b.url}/reset-password", params={"token": links[person.email]})
        assert reset_form.status_code == 200, reset_form.text
        sign_in, reset = at_once(
            partial(person.sign_in, fields),
            partial(post, mailbox, deployment.b, "/reset-password", {**form_of(reset_form), "password": NEW_PASSWORD}),
            rng,
            deployment.span("reset"),
        )
        yield server_error(reset) or after_credential_change(
            "Password changed" in reset.text, sign_in, what_lives(person, sign_in, verifier), "reset"
        )


def reset_links(smtp: SmtpServer, emails: list[str]) -> dict[str, str]:
    """The token of the reset link mailed to each address (the mails of earlier races are in the inbox too)."""
    wanted = set(emails)
    deadline = time.monotonic() + TIMEOUT
    while True:
        links = {}
        for message in list(smtp.inbox.messages):
            if message["To"] in wanted and message["Subject"] == "Reset your password":
                links[str(message["To"])] = _link_token(message)
        if len(links) == len(wanted) or time.monotonic() > deadline:
            assert len(links) == len(wanted), f"{len(links)} of {len(wanted)} reset mails arrived"
            return links
        time.sleep(0.05)


def _link_token(message: EmailMessage) -> str:
    body = message.get_body(("plain",))
    assert body is not None
    found = re.search(r"/reset-password\?token=(\S+)", body.get_content())
    assert found, body.get_content()
    return found.group(1)


def console_change_against_sign_in(deployment: Deployment, attempts: int, rng: random.Random) -> Iterator[Outcome]:
    """The console's password change (node B) against a sign-in with the old password in another browser (node
    A): the same rule as a reset."""
    for _ in range(attempts):
        person = deployment.person()
        console = person.browser()
        entered = console.get(f"{deployment.b.url}/console/sign-in", timeout=TIMEOUT)  # through A's sign-in page
        home = post_followed(console, entered, {"email": person.email, "password": OLD_PASSWORD})
        assert urlsplit(home.url).path == "/console/", (home.url, home.text)
        account = console.get(f"{deployment.b.url}/console/account", timeout=TIMEOUT)
        change = {"csrf_token": form_of(account)["csrf_token"], "current_password": OLD_PASSWORD,
                  "new_password": NEW_PASSWORD}  # fmt: skip
        fields, verifier = sign_in_fields(person, person.http, deployment.app)
        sign_in, changed = at_once(
            partial(person.sign_in, fields),
            partial(post, console, deployment.b, "/console/account/password", change),
            rng,
            deployment.span("console"),
        )
        yield server_error(changed) or after_credential_change(
            "Password changed" in changed.text, sign_in, what_lives(person, sign_in, verifier), "change"
        )


def post_followed(http: requests.Session, shown: requests.Response, values: dict[str, str]) -> requests.Response:
    """Post the form of the page ``shown`` with ``values``, following every redirect (a console sign-in)."""
    assert shown.status_code == 200, shown.text
    parser = FormParser()
    parser.feed(shown.text)
    action = parser.forms[0].action
    return http.post(urljoin(shown.url, action), data={**form_of(shown), **values}, timeout=TIMEOUT)


def disable_against_sign_in(deployment: Deployment, attempts: int, rng: random.Random) -> Iterator[Outcome]:
    """``users disable`` (this process, as the command does it) against a sign-in (node A): once disabled,
    nothing of the user's works (docs/identity.md, "Disabled users")."""
    users, revoker = UserStore(deployment.database), Revoker(deployment.database)
    for _ in range(attempts):
        person = deployment.person()
        fields, verifier = sign_in_fields(person, person.http, deployment.app)
        sign_in, _ = at_once(
            partial(person.sign_in, fields),
            partial(disable, users, revoker, person.user_id),
            rng,
            deployment.span("disable"),
        )
        yield after_credential_change(True, sign_in, what_lives(person, sign_in, verifier), "disable")


def consent_twice(deployment: Deployment, attempts: int, rng: random.Random) -> Iterator[Outcome]:
    """One consent form posted twice at once (to A and to B): one code, and a 400 page for the other; never 5xx."""
    for _ in range(attempts):
        person = deployment.person()
        fields, _ = sign_in_fields(person, person.http, deployment.third_party, scope="openid profile")
        answer = person.sign_in(fields)
        consent = {**form_of(page(person.http, answer, "/consent")), "decision": "allow"}
        twin = person.browser(like=person.http)
        first, second = at_once(
            partial(post, person.http, deployment.a, "/consent", consent),
            partial(post, twin, deployment.b, "/consent", consent),
            rng,
            deployment.span("consent-twice"),
        )
        failed = server_error(first, second)
        codes = [answer for answer in (first, second) if code_of(answer) is not None]
        pages = [answer.status_code for answer in (first, second) if "expired" in answer.text]
        if failed:
            yield failed
        elif len(codes) == 1 and pages == [400]:
            yield "one code, one 400 expired page"
        else:
            yield f"VIOLATION: {len(codes)} codes, answers {first.status_code} and {second.status_code}"


def consent_scopes(deployment: Deployment, attempts: int, rng: random.Random) -> Iterator[Outcome]:
    """Two consents of one user to one client, for different scopes, at once on A and B: both are kept (the
    next request for both scopes needs no consent)."""
    third = deployment.third_party
    for _ in range(attempts):
        person = deployment.person()
        fields, _ = sign_in_fields(person, person.http, third)
        answer = person.sign_in(fields)
        allowed = {**form_of(page(person.http, answer, "/consent")), "decision": "allow"}
        first = post(person.http, deployment.a, "/consent", allowed)
        assert code_of(first) is not None, first.text  # consent to openid alone, given before the race
        forms = []
        for scope in ("openid profile", "openid email"):
            asked, _ = authorize(person, person.http, third, scope=scope)
            forms.append({**form_of(page(person.http, asked, "/consent")), "decision": "allow"})
        twin = person.browser(like=person.http)
        profile, email = at_once(
            partial(post, person.http, deployment.a, "/consent", forms[0]),
            partial(post, twin, deployment.b, "/consent", forms[1]),
            rng,
            deployment.span("consent-scopes"),
        )
        failed = server_error(profile, email)
        quiet, _ = authorize(person, person.http, third, scope="openid profile email", prompt="none")
        if failed:
            yield failed
        elif code_of(quiet) is not None:
            yield "both consents kept"
        else:
            yield f"VIOLATION: one consent lost ({error_of(quiet)} for both scopes)"


def renewal_against_sign_out(deployment: Deployment, attempts: int, rng: random.Random) -> Iterator[Outcome]:
    """A sign-in again (``prompt=login``, node A) against a sign-out of the same browser (end-session with an
    ID token hint, node B). The rule: nothing lives in a session that signing out ended; the renewal either
    came first (and was signed out with the rest) or after (a new session)."""
    for _ in range(attempts):
        person = deployment.person()
        code, verifier = signed_in(person, person.http, deployment.app)
        id_token = redeem(deployment, deployment.app, code, verifier).json()["id_token"]
        fields, verifier = sign_in_fields(person, person.http, deployment.app, prompt="login")
        twin = person.browser(like=person.http)
        renewal, sign_out = at_once(
            partial(person.sign_in, fields),
            partial(
                twin.get, f"{deployment.b.url}/oauth2/end-session", params={"id_token_hint": id_token}, timeout=TIMEOUT
            ),
            rng,
            deployment.span("renewal"),
        )
        failed = server_error(renewal, sign_out)
        if failed:
            yield failed
            continue
        ended = SIGNED_OUT in sign_out.text
        sid = _sid_of(deployment, renewal, verifier)
        if sid is None:
            yield f"{'signed out' if ended else 'not signed out'}; the renewal got no live token"
        elif _ended(deployment, sid):
            yield "VIOLATION: a live token in a session that was signed out"
        else:
            yield f"{'signed out' if ended else 'not signed out'}; the renewal's session lives"


def _sid_of(deployment: Deployment, renewal: requests.Response, verifier: str) -> str | None:
    """The session of the renewal's live access token, if its code gives one."""
    code = code_of(renewal)
    if code is None:
        return None
    issued = redeem(deployment, deployment.app, code, verifier)
    if issued.status_code != 200:
        return None
    introspected = requests.post(
        f"{deployment.a.url}/oauth2/introspect", data={"token": issued.json()["access_token"]},
        auth=deployment.app.basic, timeout=TIMEOUT,
    ).json()  # fmt: skip
    return str(introspected["sid"]) if introspected.get("active") else None


def _ended(deployment: Deployment, sid: str) -> bool:
    with deployment.database.connect() as connection:
        ended_at = connection.scalar(sa.select(browser_sessions.c.ended_at).where(browser_sessions.c.id == sid))
    return ended_at is not None


RACES: dict[str, Callable[[Deployment, int, random.Random], Iterator[Outcome]]] = {
    "reset": reset_against_sign_in,
    "console": console_change_against_sign_in,
    "disable": disable_against_sign_in,
    "consent-twice": consent_twice,
    "consent-scopes": consent_scopes,
    "renewal": renewal_against_sign_out,
}
