"""A scripted browser for the provider's pages: ``requests`` plus an HTML form parser.

It follows redirects itself only while they stay on the provider, fills in the
provider's HTML forms as a browser would (hidden fields, checked radios, the given
values), and stops at the first redirect that leaves the provider (the client's
callback), which it never fetches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import parse_qs, urljoin, urlsplit

import requests

TIMEOUT = 10


@dataclass
class HtmlForm:
    action: str
    fields: dict[str, str] = field(default_factory=dict)  # hidden and text inputs, checked radios
    radios: dict[str, list[str]] = field(default_factory=dict)  # radio name → offered values
    checked: dict[str, str] = field(default_factory=dict)  # radio name → value checked by the page
    inputs: list[str] = field(default_factory=list)  # names of every input, in page order
    buttons: dict[str, list[str]] = field(default_factory=dict)  # submit button name → values


class FormParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[HtmlForm] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.forms.append(HtmlForm(action=a.get("action", "")))
            return
        if not self.forms or "name" not in a:
            return
        form, name = self.forms[-1], a["name"]
        if tag == "input":
            form.inputs.append(name)
            if a.get("type") == "radio":
                form.radios.setdefault(name, []).append(a.get("value", ""))
                if "checked" in a:
                    form.checked[name] = a.get("value", "")
            else:
                form.fields[name] = a.get("value", "")
        elif tag == "button":
            form.buttons.setdefault(name, []).append(a.get("value", ""))


@dataclass
class Page:
    url: str
    response: requests.Response

    @property
    def path(self) -> str:
        return urlsplit(self.url).path

    @property
    def form(self) -> HtmlForm:
        parser = FormParser()
        parser.feed(self.response.text)
        assert len(parser.forms) == 1, self.response.text
        return parser.forms[0]


@dataclass
class Callback:
    url: str

    @property
    def params(self) -> dict[str, str]:
        parsed = parse_qs(urlsplit(self.url).query, keep_blank_values=True, strict_parsing=True)
        assert all(len(values) == 1 for values in parsed.values()), self.url
        return {name: values[0] for name, values in parsed.items()}


class Browser:
    def __init__(self, issuer: str) -> None:
        self.issuer = issuer
        self.http = requests.Session()

    def go(self, url: str) -> Page | Callback:
        return self._follow(self.http.get(url, allow_redirects=False, timeout=TIMEOUT))

    def submit(self, page: Page, **values: str) -> Page | Callback:
        """Post the page's form as a browser would: its hidden fields, the given values (a button's too)."""
        form = page.form
        assert form.fields.get("interaction") and form.fields.get("csrf_token"), page.response.text
        for name in values:
            assert name in form.inputs or name in form.buttons, f"the form has no field {name}"
        data = {**form.fields, **form.checked, **values}
        action = urljoin(page.url, form.action)
        assert action.startswith(self.issuer + "/"), action
        return self._follow(self.http.post(action, data=data, allow_redirects=False, timeout=TIMEOUT))

    def _follow(self, response: requests.Response) -> Page | Callback:
        for _ in range(10):
            if not response.is_redirect:
                assert response.status_code == 200, response.text
                assert response.headers["Content-Type"].startswith("text/html")
                return Page(response.url, response)
            location = urljoin(response.url, response.headers["Location"])
            if not location.startswith(self.issuer + "/"):
                return Callback(location)
            response = self.http.get(location, allow_redirects=False, timeout=TIMEOUT)
        raise AssertionError("too many redirects")


def code_through_sign_in(base_url: str, authorize_query: str, email: str, password: str) -> str:
    """The code of an authorization request whose client needs no consent: sign in on its page and read the
    code off the redirect to the client's callback."""
    browser = Browser(base_url)
    page = browser.go(f"{base_url}/oauth2/authorize?{authorize_query}")
    assert isinstance(page, Page) and page.path == "/sign-in", page
    callback = browser.submit(page, email=email, password=password)
    assert isinstance(callback, Callback), callback
    return parse_qs(urlsplit(callback.url).query)["code"][0]


def console_owner_session(base_url: str, email: str = "sam@example.com") -> str:
    """The ``console_session`` cookie of a new owner, signed up through the console's "Create an account"."""
    browser = Browser(base_url)
    sign_up = browser.go(f"{base_url}/console/sign-in?prompt=create")
    assert isinstance(sign_up, Page) and sign_up.path == "/sign-up"
    home = browser.submit(sign_up, name="Sam", email=email, password="schemathesis-pw", organization="Sam's")
    assert isinstance(home, Page) and home.path == "/console/" and "(owner)" in home.response.text
    return str(browser.http.cookies["console_session"])
