"""The sign-in pages as HTML: what the domain's ``Page`` (which page, with what data) looks like in a browser.

Templates live in ``service/identity_api/templates`` and are rendered by Jinja2
with autoescaping. The pages work without JavaScript. The one stylesheet is
inline and allowed by its hash in the Content-Security-Policy, so the pages need
no other resource and no script.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from starlette.responses import HTMLResponse

from identity.common.page_data import Page
from service.web.html_headers import page_headers
from service.web.page_templates import templates_of

if TYPE_CHECKING:
    from jinja2 import Environment

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
PAGE_HEADERS = page_headers(CONTENT_SECURITY_POLICY)

# What each scope lets a client do, in plain words for the consent page.
SCOPE_WORDS = {
    "openid": "Know who you are",
    "profile": "See your name",
    "email": "See your email address",
    "offline_access": "Stay connected when you are not using it",
}

# The sign-up form's inputs, in order; the page fills in each one's value and error.
SIGN_UP_FIELDS: tuple[dict[str, str], ...] = (
    {"name": "name", "label": "Your name", "type": "text", "autocomplete": "name", "maxlength": "200"},
    {"name": "email", "label": "Email", "type": "email", "autocomplete": "email", "maxlength": "320"},
    {
        "name": "password",
        "label": "Password",
        "type": "password",
        "autocomplete": "new-password",
        "hint": "8 characters or more.",
    },
    {
        "name": "organization",
        "label": "Organization name",
        "type": "text",
        "autocomplete": "organization",
        "maxlength": "200",
        "hint": "A new organization, which you will own.",
    },
)


def _sign_up(page: Page) -> dict[str, Any]:
    values, errors = page.data["values"], page.data["errors"]
    joining = page.data.get("joining")
    fields = [
        {**item, "value": values.get(item["name"], ""), "error": errors.get(item["name"])}
        for item in SIGN_UP_FIELDS
        if not (joining and item["name"] == "organization")  # joining through an invitation makes none
    ]
    title = f"Create your account to join {joining['org_name']}" if joining else "Create your account"
    return {"title": title, "fields": fields}


def _consent(page: Page) -> dict[str, Any]:
    words = [SCOPE_WORDS[scope] for scope in page.data["scope"] if scope in SCOPE_WORDS]
    return {"title": f"Allow {page.data['client_name']}?", "permissions": words}


# Each page's presentation: its title, and whatever its template needs beyond the domain's data.
_PRESENTATION: dict[str, Callable[[Page], dict[str, Any]]] = {
    "sign_in": lambda _: {"title": "Sign in"},
    "sign_up": _sign_up,
    "select_organization": lambda _: {"title": "Choose an organization"},
    "consent": _consent,
    "end_session": lambda _: {"title": "Sign out?"},
    "forgot_password": lambda _: {"title": "Reset your password"},
    "reset_password": lambda _: {"title": "Choose a new password"},
    "check_email": lambda _: {"title": "Check your email"},
    "federation_test": lambda _: {"title": "Your organization's sign-in works"},  # a connection test's claims
    "message": lambda page: {"alert": page.status >= 400},  # the domain names its title
}


@cache
def _environment() -> Environment:
    """The templates' Jinja environment, made on the first page rendered (start-up does not load Jinja)."""
    return templates_of("service.identity_api")


def render(page: Page) -> str:
    """The page's HTML (``templates/<name>.html``)."""
    context = {**page.data, **_PRESENTATION[page.name](page)}
    return _environment().get_template(f"{page.name}.html").render(style=STYLE, **context)


def page_response(page: Page) -> HTMLResponse:
    """The page with its status and the pages' security headers; ``Retry-After`` when the page sets it."""
    headers = dict(PAGE_HEADERS)
    if page.retry_after is not None:
        headers["Retry-After"] = str(page.retry_after)
    return HTMLResponse(render(page), status_code=page.status, headers=headers)
