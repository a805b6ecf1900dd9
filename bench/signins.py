"""Complete sign-ins per second: authorize, the sign-in form (with its CSRF token), the code exchange.

wrk cannot fill in forms, so several driver processes each run one browser-like
loop with ``requests``: GET ``/oauth2/authorize`` (PKCE S256) → follow to the
sign-in page → POST email, password and the form's hidden fields → follow to the
client's callback → POST the code with its verifier to ``/oauth2/token``. Only
a loop that ends with an access token counts. The drivers run on the same two
cores as the service; their own CPU time is measured and reported.
"""

from __future__ import annotations

import base64
import hashlib
import multiprocessing
import secrets
import time
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import requests

TIMEOUT = 30


@dataclass(frozen=True)
class SignInTarget:
    issuer: str
    client_id: str
    client_secret: str
    redirect_uri: str
    email: str
    password: str


class _Form(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.action = ""
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.action = found.get("action", "")
        elif tag == "input" and found.get("type") == "hidden" and "name" in found:
            self.fields[found["name"]] = found.get("value", "")


def sign_in_once(http: requests.Session, target: SignInTarget) -> None:
    """One complete sign-in; raises on any step that does not go as a browser's would."""
    http.cookies.clear()  # a new browser: no session, so the password is checked every time
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    state = secrets.token_urlsafe(12)
    query = {
        "response_type": "code",
        "client_id": target.client_id,
        "redirect_uri": target.redirect_uri,
        "scope": "openid profile email",
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    response = _follow(http, http.get(f"{target.issuer}/oauth2/authorize?{urlencode(query)}", allow_redirects=False))
    form = _Form()
    form.feed(response.text)
    data = {**form.fields, "email": target.email, "password": target.password}
    callback = _follow(http, http.post(urljoin(response.url, form.action), data=data, allow_redirects=False))
    params = parse_qs(urlsplit(callback.headers["Location"]).query)
    if params.get("state") != [state] or "code" not in params:
        raise RuntimeError(f"no code: {callback.headers['Location']}")
    token = http.post(
        f"{target.issuer}/oauth2/token",
        data={
            "grant_type": "authorization_code",
            "code": params["code"][0],
            "redirect_uri": target.redirect_uri,
            "code_verifier": verifier,
        },
        auth=(target.client_id, target.client_secret),
        timeout=TIMEOUT,
    )
    if token.status_code != 200 or "access_token" not in token.json():
        raise RuntimeError(f"code exchange: {token.status_code} {token.text[:200]}")


def _follow(http: requests.Session, response: requests.Response) -> requests.Response:
    """Follow redirects on the provider; stop at the page to fill in or at the client's callback."""
    for _ in range(10):
        if not response.is_redirect:
            if response.status_code != 200:
                raise RuntimeError(f"{response.url}: {response.status_code} {response.text[:200]}")
            return response
        location = urljoin(response.url, response.headers["Location"])
        if "code=" in location or "error=" in location:
            return response
        response = http.get(location, allow_redirects=False, timeout=TIMEOUT)
    raise RuntimeError("too many redirects")


def _driver(target: SignInTarget, start_at: float, until: float, results: Any) -> None:
    http = requests.Session()
    done = failed = 0
    time.sleep(max(0.0, start_at - time.time()))  # every driver starts together, after they have all spawned
    cpu = time.process_time()
    while time.time() < until:
        try:
            sign_in_once(http, target)
            done += 1
        except (RuntimeError, requests.RequestException, KeyError):
            failed += 1
    results.put((done, failed, time.process_time() - cpu))


def measure(target: SignInTarget, seconds: float, drivers: int) -> dict[str, float]:
    """Run ``drivers`` processes for ``seconds``; complete sign-ins per second, failures and the drivers' CPU."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    start_at = time.time() + 3
    until = start_at + seconds
    processes = [context.Process(target=_driver, args=(target, start_at, until, results)) for _ in range(drivers)]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=seconds + 120) for _ in processes]
    for process in processes:
        process.join()
    elapsed = seconds  # a sign-in under way at the end still counts: within one sign-in's time of exact
    done = sum(o[0] for o in outcomes)
    return {
        "sign_ins_per_second": done / elapsed,
        "sign_ins": done,
        "failures": sum(o[1] for o in outcomes),
        "driver_cpu_share": sum(o[2] for o in outcomes) / elapsed,  # in cores: 1.0 is one core's whole time
    }
