"""Server-rendered pages of the sign-in: HTML that works without JavaScript.

Templates live in ``identity/templates`` and are rendered by Jinja2 with
autoescaping. The one stylesheet is inline and allowed by its hash in the
Content-Security-Policy, so the pages need no other resource and no script.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f4ef;color:#1d1b16}"
    "main{max-width:26rem;margin:4rem auto;padding:2rem;background:#fff;border-radius:.5rem;"
    "box-shadow:0 1px 3px rgba(0,0,0,.15)}"
    "h1{font-size:1.5rem;margin-top:0}label{display:block;margin-top:1rem;font-weight:600}"
    "input[type=email],input[type=password],input[type=text]{width:100%;box-sizing:border-box;"
    "padding:.5rem;font:inherit;border:1px solid #8a8578;border-radius:.25rem}"
    "fieldset{border:0;padding:0}legend{font-weight:600}.choice{margin:.5rem 0}"
    ".choice label{display:inline;font-weight:400;margin:0}"
    "button{margin-top:1.5rem;margin-right:.5rem;padding:.6rem 1.2rem;font:inherit;border:0;"
    "border-radius:.25rem;background:#9a3412;color:#fff;cursor:pointer}"
    "button.secondary{background:#e7e2d6;color:#1d1b16}"
    ".error{color:#b91c1c;font-weight:600}.hint{color:#5c574b;font-size:.9rem}"
)
STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()

# No scripts, no plugins, no framing, no <base>; only the inline stylesheet above. No form-action:
# browsers apply it to the redirect that follows a form post, which would block the way back.
CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; style-src 'sha256-{STYLE_HASH}'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'"
)

# What each scope lets a client do, in plain words for the consent page.
SCOPE_WORDS = {
    "openid": "Know who you are",
    "profile": "See your name",
    "email": "See your email address",
    "offline_access": "Stay connected when you are not using it",
}


@dataclass(frozen=True, slots=True)
class Page:
    """A rendered page and its status; ``retry_after`` goes out as a header when set."""

    html: str
    status: int = 200
    retry_after: int | None = None
    headers: dict[str, str] = field(default_factory=dict)


_environment = Environment(
    loader=PackageLoader("identity", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


def render(template: str, *, status: int = 200, retry_after: int | None = None, **context: Any) -> Page:
    html = _environment.get_template(template).render(style=STYLE, **context)
    return Page(html, status, retry_after)


def message(title: str, text: str, *, status: int = 200, retry_after: int | None = None) -> Page:
    return render(
        "message.html", title=title, message=text, alert=status >= 400, status=status, retry_after=retry_after
    )
