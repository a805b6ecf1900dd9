"""How long a click on a verification link takes to resume a paused sign-in, against a real server.

The service runs as users run it (``serve``, SQLite, no SMTP server: mails are ``.eml`` files in a folder beside
the database, ``MENUS_MAIL_DIR``). A client is registered with ``--require-verified-email``. Each round signs a
new user up through the pages (``prompt=create``), which pauses on the check-your-email page; the mailed link is
read from its ``.eml`` file, and the clock runs from the GET of the link (the click) to the answer that sends the
browser to the client's redirect URI with a code (the resumed authorization), in the browser that started it.

    python -m tools.resume_timing              # 15 rounds (the sign-up bound of one network is 20)
    python -m tools.resume_timing --rounds 10
"""

from __future__ import annotations

import argparse
import email
import re
import statistics
import tempfile
import time
from email.message import EmailMessage
from email.policy import default
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx

from tests.support.live import LiveService, live_service
from tests.support.pkce_pairs import pkce_pair

REDIRECT_URI = "http://127.0.0.1:9/callback"  # never contacted: the code is read from the redirect
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')
LINK = re.compile(r"https?://\S+/verify-email\?token=[\w-]+")


def mailed_link(outbox: Path, seen: set[Path], deadline: float) -> str:
    """The verification link of the next ``.eml`` file the mail worker writes."""
    while time.monotonic() < deadline:
        for path in sorted(set(outbox.glob("*.eml")) - seen):
            seen.add(path)
            message = email.message_from_bytes(path.read_bytes(), policy=default)
            assert isinstance(message, EmailMessage)
            body = message.get_body(("plain",))
            found = LINK.search(body.get_content()) if body is not None else None
            if found:
                return found.group(0)
        time.sleep(0.05)
    raise TimeoutError("no verification mail was written")


def one_round(service: LiveService, client_id: str, n: int, seen: set[Path]) -> float:
    """Sign up, pause, click the link: the click's seconds to the redirect with a code."""
    _, challenge = pkce_pair()
    with httpx.Client(base_url=service.url, follow_redirects=False, timeout=30) as browser:
        params = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT_URI,
            "scope": "openid email",
            "state": f"s{n}",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "prompt": "create",
        }
        sign_up = browser.get("/oauth2/authorize", params=params).headers["location"]
        fields = dict(HIDDEN.findall(browser.get(sign_up).text))
        form = {
            **fields,
            "name": f"Timing {n}",
            "email": f"timing{n}-{time.time_ns()}@example.com",
            "password": "a long enough kitchen password",
            "organization": f"Timing Kitchen {n}",
        }
        paused = browser.post("/sign-up", data=form)
        assert paused.headers["location"].startswith("/check-email?"), paused.headers
        link = urlsplit(mailed_link(service.workdir / "var" / "outbox", seen, time.monotonic() + 30))
        started = time.perf_counter()
        resumed = browser.get(f"{link.path}?{link.query}")
        seconds = time.perf_counter() - started
        location = resumed.headers.get("location", "")
        assert resumed.status_code == 302 and location.startswith(REDIRECT_URI), (resumed.status_code, location)
        assert "code" in parse_qs(urlsplit(location).query)
        return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as folder:
        outbox = Path(folder) / "var" / "outbox"  # a transport of .eml files (MENUS_MAIL_DIR), read below
        with live_service(Path(folder), {"MENUS_MAIL_POLL_INTERVAL": "1", "MENUS_MAIL_DIR": str(outbox)}) as service:
            org = service.cli_json("orgs", "create", "--name", "Timing Foods")
            client = service.cli_json(
                "clients", "create", "--name", "Strict App", "--org", org["id"], "--first-party",
                "--redirect-uri", REDIRECT_URI, "--auth-method", "client_secret_basic",
                "--require-verified-email",
            )  # fmt: skip
            seen: set[Path] = set()
            times = [one_round(service, client["client_id"], n, seen) for n in range(rounds)]
    ms = sorted(t * 1000 for t in times)
    print(
        f"click on the link to the redirect with a code, {rounds} rounds: median {statistics.median(ms):.1f} ms, "
        f"min {ms[0]:.1f} ms, max {ms[-1]:.1f} ms"
    )


if __name__ == "__main__":
    main()
