"""panva's oidc-provider (npm, pinned in package.json) as an organization's own identity provider on loopback, for the
system test of federation: ``tests/support/upstream_provider.mjs``, started with node on a free port.

``register`` registers our connection at it (Dynamic Client Registration, RFC 7591, behind its initial access
token) with the redirect, post-logout and back-channel logout URIs the test knows once the organization exists;
``set_account`` sets the claims of one of its accounts (an unverified address, a changed one). Its sign-in page is
its own (devInteractions): any login, any password; the login is the account's ``sub``.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.live import ROOT, free_port

SCRIPT = ROOT / "tests" / "support" / "upstream_provider.mjs"


@dataclass(frozen=True)
class Upstream:
    issuer: str
    initial_access_token: str

    def register(self, *, redirect_uri: str, post_logout_redirect_uri: str, backchannel_logout_uri: str) -> Any:
        """Our client at the provider: its ``client_id`` and ``client_secret`` (client_secret_basic)."""
        metadata = {
            "redirect_uris": [redirect_uri],
            "post_logout_redirect_uris": [post_logout_redirect_uri],
            "backchannel_logout_uri": backchannel_logout_uri,
            "backchannel_logout_session_required": True,
            "token_endpoint_auth_method": "client_secret_basic",
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
        }
        request = urllib.request.Request(
            f"{self.issuer}/reg",
            data=json.dumps(metadata).encode(),
            headers={"Authorization": f"Bearer {self.initial_access_token}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.load(answer)

    def set_account(self, sub: str, **claims: Any) -> None:
        request = urllib.request.Request(
            f"{self.issuer}/test/accounts/{sub}",
            data=json.dumps(claims).encode(),
            headers={"Content-Type": "application/json"},
            method="PUT",
        )
        urllib.request.urlopen(request, timeout=10).close()


@contextmanager
def upstream_provider(workdir: Path) -> Iterator[Upstream]:
    """The provider, running until the block ends (its output in ``workdir/upstream.log``)."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is missing: the federation system test runs panva's oidc-provider on it")
    port, token = free_port(), secrets.token_urlsafe(24)
    log = (workdir / "upstream.log").open("w")
    process = subprocess.Popen([node, str(SCRIPT), str(port), token], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    issuer = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{issuer}/.well-known/openid-configuration", timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((workdir / "upstream.log").read_text()) from None
                time.sleep(0.1)
        yield Upstream(issuer, token)
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
