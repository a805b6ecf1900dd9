"""Each API's Swagger UI, under ``{prefix}/ui/``, from the Swagger UI build of the swagger-ui-bundle package.

The documentation step (``service/web/api_docs.py``) answers every path under ``{prefix}/ui/`` from here:

- ``{prefix}/ui/`` and ``{prefix}/ui/index.html``: Swagger UI's standalone page, pointed at the API's document
  (``{prefix}/openapi.json``), made once at start-up;
- ``{prefix}/ui/oauth2-redirect.html``: the page Swagger UI's "Authorize" comes back to, as shipped;
- the scripts, the style sheet and the icons those pages load, and their source maps: Starlette's
  ``StaticFiles`` from the bundle (``ETag``, ``Last-Modified``, 304, ``HEAD``, ranges);
- anything else is 404: the bundle's template, its Petstore demo page and its initializer are not ours to serve.

Each page is sent with a Content Security Policy that allows its own inline script and style by their SHA-256
digests, and nothing inline besides; every answer forbids framing (the pages share their origin with the sign-in
pages). The page is written here rather than rendered from the bundle's Jinja template: Connexion's Swagger UI
middleware, which did that, loaded Jinja into every worker and routed every request of the API through its own
router first.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope
from swagger_ui_bundle import swagger_ui_path

from service.web.edge import Exchange, Headers

BUNDLE = Path(str(swagger_ui_path))
# What the pages load (index.html's links and scripts), and the source maps a browser's developer tools ask for.
ASSETS = ("swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js", "favicon-32x32.png",
          "favicon-16x16.png")  # fmt: skip
SOURCE_MAPS = tuple(f"{name}.map" for name in ASSETS if (BUNDLE / f"{name}.map").is_file())
SERVED_ASSETS = frozenset((*ASSETS, *SOURCE_MAPS))
REDIRECT_PAGE = "oauth2-redirect.html"
# The headers of every Swagger UI answer; a page's CSP adds the digests of its inline script and style.
UI_HEADERS = [
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]
UI_POLICY = (
    "default-src 'none'; script-src 'self'{script}; style-src 'self'{style}; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'{connect}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_INLINE = re.compile(rb"<(script|style)>(.*?)</\1>", re.DOTALL)

# Swagger UI's standalone page (the bundle's index.j2, as Connexion rendered it), for the document's URL and the
# page's title (the two %-fields: the page has no other "%"). Each API's page is titled after its API, so that four
# browser tabs (menus, identity, operations, console) say which is which.
_PAGE = """<!-- HTML for static distribution bundle build -->
<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <title>%(title)s</title>
    <link rel="stylesheet" type="text/css" href="./swagger-ui.css" />
    <link rel="icon" type="image/png" href="./favicon-32x32.png" sizes="32x32" />
    <link rel="icon" type="image/png" href="./favicon-16x16.png" sizes="16x16" />
    <style>
      html
      {
        box-sizing: border-box;
        overflow: -moz-scrollbars-vertical;
        overflow-y: scroll;
      }

      *,
      *:before,
      *:after
      {
        box-sizing: inherit;
      }

      body
      {
        margin:0;
        background: #fafafa;
      }
    </style>
  </head>

  <body>
    <div id="swagger-ui"></div>

    <script src="./swagger-ui-bundle.js" charset="UTF-8"> </script>
    <script src="./swagger-ui-standalone-preset.js" charset="UTF-8"> </script>
    <script>
    window.onload = function() {
      const ui = SwaggerUIBundle({
        url: %(document_url)s,
        validatorUrl: null,
        dom_id: '#swagger-ui',
        deepLinking: true,
        presets: [
          SwaggerUIBundle.presets.apis,
          SwaggerUIStandalonePreset
        ],
        plugins: [
          SwaggerUIBundle.plugins.DownloadUrl
        ],
        layout: "StandaloneLayout"
      });
      window.ui = ui;
    };
  </script>
  </body>
</html>
"""


@dataclass(frozen=True, slots=True)
class Page:
    """An HTML page of the Swagger UI as sent: its body and headers (its CSP names its inline code)."""

    body: bytes
    headers: Headers


class SwaggerUi:
    """The Swagger UI of one API: ``answer(name, scope, receive, exchange)`` for the path ``{prefix}/ui/{name}``."""

    _files = StaticFiles(directory=BUNDLE)  # the same folder for every API

    def __init__(self, document_url: str, api_origin: str = "", api_title: str = "") -> None:
        title = html.escape(f"{api_title} · Swagger UI" if api_title else "Swagger UI")
        home = _page(_PAGE % {"document_url": _script_string(document_url), "title": title}, api_origin)
        self.pages = {"": home, "index.html": home, REDIRECT_PAGE: _page(_read(REDIRECT_PAGE), api_origin)}

    def knows(self, name: str) -> bool:
        return name in self.pages or name in SERVED_ASSETS

    @staticmethod
    def guard(exchange: Exchange) -> None:
        """Every answer under ``{prefix}/ui/`` (its errors too) forbids framing; one without a page's own policy
        gets the policy that allows no inline code."""
        exchange.on_start.append(_guarded)

    async def answer(self, name: str, scope: Scope, receive: Receive, exchange: Exchange) -> None:
        """Answer a GET or HEAD of ``name``, one that ``knows``, after ``guard``."""
        page = self.pages.get(name)
        if page is not None:
            await exchange({"type": "http.response.start", "status": 200, "headers": page.headers})
            await exchange({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else page.body})
            return
        response = await self._files.get_response(name, scope)
        await response(scope, receive, exchange)


def _guarded(_exchange: Exchange, headers: Headers) -> None:
    if not any(name == b"content-security-policy" for name, _ in headers):
        headers.append(_NO_INLINE)
    headers.extend(UI_HEADERS)


def _page(html: str, api_origin: str) -> Page:
    body = html.encode()
    headers = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        policy(body, api_origin),
    ]
    return Page(body, headers)


def policy(page: bytes, api_origin: str = "") -> tuple[bytes, bytes]:
    """CSP Level 3: each inline ``<script>`` and ``<style>`` of ``page`` is allowed by its SHA-256 digest alone;
    ``api_origin``: where "Try it out" sends requests, when not the page's own origin."""
    digests: dict[bytes, list[str]] = {b"script": [], b"style": []}
    for kind, content in _INLINE.findall(page):
        digests[kind].append(f" 'sha256-{base64.b64encode(hashlib.sha256(content).digest()).decode()}'")
    value = UI_POLICY.format(
        script="".join(digests[b"script"]),
        style="".join(digests[b"style"]),
        connect=f" {api_origin}" if api_origin else "",
    )
    return b"content-security-policy", value.encode()


_NO_INLINE = policy(b"")  # the policy of an answer with no inline code (an asset, an error)


def _script_string(text: str) -> str:
    """``text`` as a JavaScript string literal inside an HTML ``<script>`` (no ``</`` can end the element)."""
    return json.dumps(text).replace("</", "<\\/")


@cache  # the same file for every API's Swagger UI
def _read(name: str) -> str:
    return (BUNDLE / name).read_text(encoding="utf-8")
