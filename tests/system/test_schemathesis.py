"""Schemathesis, with every check (and the stateful phase), against the live service and its three contracts.

The service runs as users run it (``tests/support/live.py``); the API key, the organization, the
user and the client are made with the command line, and the tokens through the
provider's own endpoints. Bounded and deterministic: ``-n`` examples per operation and
``--generation-deterministic``. The JUnit reports are kept under ``reports/``. The
settings files at the project's root (``schemathesis.toml`` for the menus API,
``schemathesis-identity.toml`` for the identity endpoints) name each narrowed
expectation and why.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import urlencode

import requests

from tests.support.form_browser import code_through_sign_in
from tests.support.identity_fixtures import PASSWORD
from tests.support.live import REDIRECT_URI, LiveService, live_service
from tests.support.pkce_pairs import pkce_pair
from tests.support.schemathesis_runs import STATEFUL_EXAMPLES, cases, run_schemathesis

TIMEOUT = 10
MENUS_STATEFUL_EXAMPLES = "150"  # the menus API's stateful scenarios


def assert_no_issues(done: subprocess.CompletedProcess[str]) -> None:
    """No failure, no error, no warning."""
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]
    assert "No issues found" in done.stdout, done.stdout[-8000:]


def assert_clean(done: subprocess.CompletedProcess[str]) -> tuple[int, int]:
    """No failure, no error, no warning, and the stateful phase ran: (links it followed, links in the document)."""
    assert_no_issues(done)
    links = re.search(r"API Links:\s+(\d+) covered / \d+ selected / (\d+) total", done.stdout)
    assert links, "the stateful phase did not run:\n" + done.stdout[-3000:]
    print(f"{cases(done.stdout)} test cases, {links.group(0)}")  # shown with pytest -s
    return int(links.group(1)), int(links.group(2))


def test_menus_api_passes_every_schemathesis_check(tmp_path: Path) -> None:
    with live_service(tmp_path, env={"MENUS_RATE_LIMIT": "1000000"}) as service:
        key = service.api_key("schemathesis")
        url, auth = f"{service.url}/v1/openapi.json", f"Authorization: Bearer {key}"
        generated = run_schemathesis(url, "schemathesis-menus", "-H", auth, "--phases", "examples,coverage,fuzzing")
        # The stateful phase on its own, with more scenarios: the random picks change the data its links follow,
        # and with the other phases' 60 it left one of the seven links unfollowed in a few runs of many.
        stateful = run_schemathesis(
            url, "schemathesis-menus-stateful", "-H", auth, "--phases", "stateful", examples=MENUS_STATEFUL_EXAMPLES
        )
    assert_no_issues(generated)
    covered, total = assert_clean(stateful)
    assert covered == total, "the stateful phase did not follow every link"


def identity_credentials(service: LiveService) -> dict[str, str]:
    """What schemathesis-identity.toml reads: a client, a user's access token, an application token."""
    org = service.cli_json("orgs", "create", "--name", "Fuzzing Kitchen")
    user = service.create_user("fuzz@example.com", "Fuzz", PASSWORD, org["id"])
    for email in ("fuzz-2@example.com", "fuzz-3@example.com"):  # a directory of several pages when limit < 3
        service.create_user(email, "Fuzz", PASSWORD, org["id"])
    client = service.cli_json(
            "clients", "create", "--name", "Schemathesis", "--org", org["id"],
            "--redirect-uri", REDIRECT_URI, "--auth-method", "client_secret_basic", "--first-party",
            "--grant", "authorization_code", "--grant", "refresh_token", "--grant", "client_credentials",
            "--scope", "openid", "--scope", "profile", "--scope", "email", "--scope", "offline_access",
            "--scope", "members:read",
    )  # fmt: skip
    basic = (client["client_id"], client["client_secret"])
    token_url = f"{service.url}/oauth2/token"

    verifier, challenge = pkce_pair()
    query = urlencode({"response_type": "code", "client_id": client["client_id"], "redirect_uri": REDIRECT_URI,
                       "scope": "openid profile email", "state": "s", "code_challenge": challenge,
                       "code_challenge_method": "S256"})  # fmt: skip
    code = code_through_sign_in(service.url, query, user["email"], PASSWORD)
    exchange = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI,
                "code_verifier": verifier}  # fmt: skip
    user_token = requests.post(token_url, data=exchange, auth=basic, timeout=TIMEOUT).json()["access_token"]

    application = {"grant_type": "client_credentials", "scope": "members:read"}
    app_token = requests.post(token_url, data=application, auth=basic, timeout=TIMEOUT).json()["access_token"]
    return {
        "IDP_CLIENT_ID": client["client_id"],
        "IDP_CLIENT_SECRET": client["client_secret"],
        "IDP_USER_TOKEN": user_token,
        "IDP_APP_TOKEN": app_token,
    }


def test_identity_api_passes_every_schemathesis_check_with_real_credentials(tmp_path: Path) -> None:
    """Every check, with a real client's credentials and real tokens (schemathesis-identity.toml)."""
    with live_service(tmp_path) as service:
        credentials = identity_credentials(service)
        url, config = f"{service.url}/openapi.json", "schemathesis-identity.toml"
        every_phase = run_schemathesis(url, "schemathesis-identity", config=config, env=credentials)
        from_the_token_endpoint = run_schemathesis(
            url, "schemathesis-identity-stateful", "--phases", "stateful", "--include-tag", "tokens",
            "--include-tag", "userinfo", config=config, env=credentials, examples=STATEFUL_EXAMPLES,
        )  # fmt: skip
    covered, total = assert_clean(every_phase)
    also_covered, _ = assert_clean(from_the_token_endpoint)
    assert covered + also_covered == total, "the stateful phases did not follow every link between them"


def test_operations_endpoints_pass_every_schemathesis_check(tmp_path: Path) -> None:
    with live_service(tmp_path) as service:
        done = run_schemathesis(f"{service.url}/ops/openapi.json", "schemathesis-operations")
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]
    assert "No issues found" in done.stdout, done.stdout[-8000:]
    print(f"{cases(done.stdout)} test cases")
