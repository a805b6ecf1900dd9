"""A browser for the developer console in process: Starlette's TestClient on the ASGI app, forms parsed as a
browser would (``tests/support/form_browser.FormParser``), redirects followed by hand so each step can be checked."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import httpx
from starlette.testclient import TestClient

from tests.support.form_browser import FormParser, HtmlForm
from tests.support.identity_fixtures import PASSWORD

ORIGIN = "http://127.0.0.1:8000"  # the settings' default base URL and issuer: the console's registered callback


def forms(html: str) -> list[HtmlForm]:
    parser = FormParser()
    parser.feed(html)
    return parser.forms


def form_with(html: str, field: str) -> HtmlForm:
    found = [form for form in forms(html) if field in form.inputs]
    assert len(found) == 1, html
    return found[0]


class ConsoleBrowser:
    def __init__(self, app: Any, path: str = "/console") -> None:
        self.http = TestClient(app, base_url=ORIGIN, follow_redirects=False)
        self.path = path

    def __enter__(self) -> ConsoleBrowser:
        self.http.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.__exit__(*exc)

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.http.get(url, **kwargs)

    def post(self, url: str, data: dict[str, str], **kwargs: Any) -> httpx.Response:
        return self.http.post(url, data=data, **kwargs)

    def follow(self, response: httpx.Response, until: str) -> httpx.Response:
        """Follow redirects until the path ``until`` is reached (not fetched); return the redirect to it."""
        for _ in range(10):
            assert response.status_code in (302, 303), response.text
            location = response.headers["location"]
            if urlsplit(location).path == until:
                return response
            response = self.get(location)
        raise AssertionError("too many redirects")

    def start(self, prompt: str | None = None) -> tuple[str, httpx.Response]:
        """Click "Sign in" (or "Create an account"); the authorization URL and the provider's first page."""
        started = self.get(f"{self.path}/sign-in" + (f"?prompt={prompt}" if prompt else ""))
        assert started.status_code == 303, started.text
        authorize = started.headers["location"]
        page = self.get(authorize)
        assert page.status_code == 302, page.text
        return authorize, self.get(page.headers["location"])

    def sign_up(self, email: str, name: str = "Cleo Cruz", organization: str = "Cleo's Kitchen") -> httpx.Response:
        """Sign up through the console's "Create an account"; the callback redirect (not yet fetched)."""
        _, page = self.start("create")
        form = form_with(page.text, "organization")
        values = {**form.fields, "name": name, "email": email, "password": PASSWORD, "organization": organization}
        return self.follow(self.post(form.action, values), f"{self.path}/callback")

    def sign_in(self, email: str, org_name: str | None = None, password: str = PASSWORD) -> httpx.Response:
        _, page = self.start()
        form = form_with(page.text, "password")
        answer = self.post(form.action, {**form.fields, "email": email, "password": password})
        if org_name is not None:
            picker = self.get(answer.headers["location"])
            form = form_with(picker.text, "org_id")
            answer = self.post(form.action, {**form.fields, "org_id": self._org_id(picker.text, org_name)})
        return self.follow(answer, f"{self.path}/callback")

    @staticmethod
    def _org_id(html: str, name: str) -> str:
        match = re.search(r'value="(org_[0-9a-f]+)"[^>]*>\s*<label[^>]*>' + re.escape(name), html)
        assert match, html
        return match.group(1)

    def complete(self, callback: httpx.Response) -> httpx.Response:
        """Fetch the callback; the console's home page after it."""
        done = self.get(callback.headers["location"])
        assert done.status_code == 303 and done.headers["location"] == f"{self.path}/", done.text
        return self.get(f"{self.path}/")

    def csrf(self) -> str:
        """The CSRF token of the console session, from the home page's forms."""
        return _csrf_of(self.get(f"{self.path}/").text)

    def create_key(self, name: str) -> tuple[httpx.Response, str | None]:
        """Post the create form and follow its redirect (POST/redirect/GET): the page that shows the key, and the key
        (None when the form was refused)."""
        answer = self.post(f"{self.path}/keys", {"csrf_token": self.csrf(), "name": name})
        if answer.status_code == 303 and answer.headers["location"] == f"{self.path}/keys/new":
            answer = self.get(answer.headers["location"])
        return answer, key_in(answer.text)


def key_in(html: str) -> str | None:
    """The API key a page shows, if any."""
    match = re.search(r'value="(rmk_[A-Za-z0-9_-]{43})"', html)
    return match.group(1) if match else None


def _csrf_of(html: str) -> str:
    tokens = {form.fields["csrf_token"] for form in forms(html) if "csrf_token" in form.fields}
    assert len(tokens) == 1, html
    return tokens.pop()
