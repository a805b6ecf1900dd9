"""The logs as operators see them, from ``regional-menus serve`` and the command line: JSON lines only, the audit
events of a whole sign-in, and never a secret. The log records of each request, in process, are
tests/api/test_logs.py."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import requests

from tests.support.form_browser import Browser, Callback, Page
from tests.support.identity_fixtures import CALLBACK, PASSWORD
from tests.support.identity_pages import bearer
from tests.support.live import live_service
from tests.support.pkce_pairs import pkce_pair


def test_serve_logs_only_json_lines_and_never_a_secret(tmp_path: Path) -> None:
    """As operators see it: the server's output and the commands' audit lines, after a whole sign-in."""
    with live_service(tmp_path) as service:
        key = service.api_key("logs")
        org = service.cli_json("orgs", "create", "--name", "Log Kitchen")
        service.create_user("log@example.com", "Log", PASSWORD, org["id"])
        client = service.cli_json(
            "clients", "create", "--name", "Logs", "--org", org["id"], "--redirect-uri", CALLBACK,
            "--auth-method", "client_secret_basic", "--first-party",
            "--scope", "openid", "--scope", "offline_access",
        )  # fmt: skip
        auth = (client["client_id"], client["client_secret"])
        verifier, challenge = pkce_pair()
        browser = Browser(service.url)
        query = urlencode({"response_type": "code", "client_id": client["client_id"], "redirect_uri": CALLBACK,
                           "scope": "openid offline_access", "state": "s", "code_challenge": challenge,
                           "code_challenge_method": "S256"})  # fmt: skip
        page = browser.go(f"{service.url}/oauth2/authorize?{query}")
        assert isinstance(page, Page), page
        callback = browser.submit(page, email="log@example.com", password=PASSWORD)
        assert isinstance(callback, Callback), callback
        code = callback.params["code"]
        token_url = f"{service.url}/oauth2/token"
        exchange = {"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK}
        issued = requests.post(token_url, data={**exchange, "code_verifier": verifier}, auth=auth, timeout=10).json()
        again = {"grant_type": "refresh_token", "refresh_token": issued["refresh_token"]}
        renewed = requests.post(token_url, data=again, auth=auth, timeout=10).json()
        requests.post(f"{service.url}/oauth2/revoke", data={"token": renewed["refresh_token"]}, auth=auth, timeout=10)
        requests.get(f"{service.url}/v1/menus/regions", headers=bearer(key), timeout=10)
        commands = "".join(service.command_errors)
    served = (tmp_path / "server.log").read_text()
    lines = [json.loads(line) for line in served.splitlines()]  # every line is JSON
    assert not [line for line in lines if line["logger"] == "uvicorn.access"]
    events = {line["event"] for line in lines if line["logger"] == "regional_menus.audit"}
    assert {"sign_in", "token_issued", "token_revoked"} <= events
    assert {json.loads(line)["event"] for line in commands.splitlines()} == {"api_key_created"}
    secrets = {
        "password": PASSWORD,
        "client secret": client["client_secret"],
        "API key": key,
        "authorization code": code,
        "PKCE verifier": verifier,
        **{name: issued[name] for name in ("access_token", "refresh_token", "id_token")},
        **{f"renewed {name}": renewed[name] for name in ("access_token", "refresh_token")},
    }
    leaked = [name for name, secret in secrets.items() if secret in served + commands]
    assert not leaked
