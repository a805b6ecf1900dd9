"""Each API's documentation: its OpenAPI document as written (JSON and YAML) and its Swagger UI pages.

At the edge of an API (``service/web/edge.py``), ``Documentation`` answers ``{prefix}/openapi.json`` and
``{prefix}/openapi.yaml`` itself, from bytes made once at start-up (``service.web.served_documents.ServedDocument``),
with a strong ``ETag`` and 304 on ``If-None-Match``, and every path under ``{prefix}/ui/`` from the API's Swagger UI
(``service.web.swagger_ui``). ``{prefix}/ui`` without its slash is 404, never a redirect, and so is any other path
of the API that ends in a slash. With the documentation switched off (``MENUS_DOCS=off``), every one of these
paths is 404.
"""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

from service.web.edge import Exchange
from service.web.etags import none_match
from service.web.problems import Problem, nothing_here, send_problem
from service.web.served_documents import Representation, ServedDocument
from service.web.swagger_ui import SwaggerUi

DOCUMENT_CACHE_CONTROL = b"no-cache"  # any cache may keep a document, but revalidates it (cheap: a 304)
READ_ONLY = "GET, HEAD"  # the methods of every document and page


class Documentation:
    """The edge's step (``service/web/edge.py``) that serves ``document`` at ``{prefix}/openapi.json|yaml`` and
    the Swagger UI under ``{prefix}/ui/``; every other request goes on to the API."""

    def __init__(
        self,
        *,
        prefix: str,
        document: ServedDocument,
        enabled: bool = True,
        api_origin: str = "",
        pages_end_in_slash: bool = False,
        title: str = "",
    ) -> None:
        self.pages_end_in_slash = pages_end_in_slash  # the console's home is {prefix}/: its own app answers slashes
        self.enabled = enabled
        self.documents = {f"{prefix}/openapi.json": document.json, f"{prefix}/openapi.yaml": document.yaml}
        self.ui = f"{prefix}/ui"
        # api_origin: where "Try it out" sends requests, when not the page's own origin
        # title: the API's (its document's info.title), which its Swagger UI page is named after
        self.swagger_ui = SwaggerUi(f"{prefix}/openapi.json", api_origin, title) if enabled else None

    async def __call__(self, scope: Scope, receive: Receive, exchange: Exchange) -> tuple[Scope, Receive] | None:
        path = scope["path"]
        representation = self.documents.get(path)
        if representation is not None:
            await self._document(scope, exchange, representation)
        elif path.startswith(self.ui + "/"):
            await self._ui(path[len(self.ui) + 1 :], scope, receive, exchange)
        elif path == self.ui:
            await send_problem(exchange, nothing_here())
        elif path.endswith("/") and not self.pages_end_in_slash:
            # One URL per resource: no redirect to the path without its slash (Starlette's would be built from Host).
            await send_problem(exchange, nothing_here())
        else:
            return scope, receive
        return None

    async def _ui(self, name: str, scope: Scope, receive: Receive, exchange: Exchange) -> None:
        ui = self.swagger_ui
        if ui is None:
            await send_problem(exchange, nothing_here())
            return
        ui.guard(exchange)
        if not ui.knows(name):
            await send_problem(exchange, nothing_here())
        elif scope["method"] not in ("GET", "HEAD"):
            await send_problem(exchange, _read_only())
        else:
            await ui.answer(name, scope, receive, exchange)

    async def _document(self, scope: Scope, send: Send, representation: Representation) -> None:
        if not self.enabled:
            await send_problem(send, nothing_here())
            return
        if scope["method"] not in ("GET", "HEAD"):
            await send_problem(send, _read_only())
            return
        validators = [(b"etag", representation.etag), (b"cache-control", DOCUMENT_CACHE_CONTROL)]
        if_none_match = dict(scope["headers"]).get(b"if-none-match")
        if if_none_match is not None and none_match(if_none_match, representation.etag):
            await send({"type": "http.response.start", "status": 304, "headers": validators})
            await send({"type": "http.response.body", "body": b""})
            return
        headers = [
            (b"content-type", representation.media_type.encode()),
            (b"content-length", str(len(representation.body)).encode()),
            *validators,
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else representation.body})


def _read_only() -> Problem:
    return Problem(405, "method_not_allowed", f"This path supports {READ_ONLY} only.", headers={"Allow": READ_ONLY})
