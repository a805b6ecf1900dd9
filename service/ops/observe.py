"""What every request gets, whichever API answers it: a request id, a count, a latency and one log line.

This is the one place requests are observed: the edge (``service/web/edge.py``) calls it for every
request the dispatcher answers, so the menus API, the identity API, the operations endpoints and the
dispatcher's own 404s are measured alike, and the menus hot path pays for it once (a dictionary lookup
for the route template, two metric updates and, when INFO is on, one log line).

``X-Request-ID``: a sane id from the client or the proxy (1 to 128 visible ASCII characters) is
kept, so one id follows a request across services; anything else (empty, too long, control
characters that could forge a log line) is replaced with a new one. The id is returned on every
answer, errors included, and is on every log line written while the request is answered.
"""

from __future__ import annotations

import random
import re
import time
from contextvars import Token
from dataclasses import dataclass

from starlette.types import Scope

from service.ops import metrics
from service.ops.logs import CURRENT_REQUEST, RequestContext, request_lines
from service.ops.route_templates import RouteTemplates
from service.web.edge import Exchange
from service.web.forwarded import TrustedProxies

REQUEST_ID_HEADER = b"x-request-id"
SANE_REQUEST_ID = re.compile(rb"[\x21-\x7e]{1,128}")


def request_id(scope: Scope) -> str:
    """The client's ``X-Request-ID`` when it is sane (the first one, if sent twice), else a new one."""
    for name, value in scope["headers"]:
        if name == REQUEST_ID_HEADER:  # ASGI servers give header names in lower case
            if SANE_REQUEST_ID.fullmatch(value):
                return str(value.decode("ascii"))
            break
    return f"{random.getrandbits(128):032x}"  # unique, not secret: the random module is fast and reseeded in forks


@dataclass(slots=True)
class Observed:
    """One request as the observer records it."""

    context: RequestContext
    header: tuple[bytes, bytes]  # the X-Request-ID every answer carries
    started: float  # time.perf_counter() at arrival


class RequestObserver:
    """The edge's observer (``service/web/edge.py``): called as each request arrives, starts and ends."""

    def __init__(self, routes: RouteTemplates, *, logged_path_max: int, proxies: TrustedProxies | None = None) -> None:
        self.routes = routes
        # how each request's line is written, chosen as the app is built (service.ops.logs.request_lines)
        self.lines = request_lines()
        self.logged_path_max = logged_path_max  # characters of the path kept in a log line
        self.proxies = proxies  # whose X-Forwarded-For/-Proto are believed (service/web/forwarded.py); None: nobody's

    def begin(self, exchange: Exchange) -> Token[RequestContext | None]:
        started = time.perf_counter()
        scope = exchange.scope
        if self.proxies is not None:  # here, as the request arrives, rather than in a layer of its own
            scope = exchange.scope = self.proxies.resolve(scope)
        client = scope.get("client")
        context = RequestContext(request_id(scope), client[0] if client else None)
        exchange.context = Observed(context, (REQUEST_ID_HEADER, context.request_id.encode("ascii")), started)
        return CURRENT_REQUEST.set(context)

    def start(self, exchange: Exchange, headers: list[tuple[bytes, bytes]]) -> None:
        observed: Observed = exchange.context
        for name, _value in headers:
            if name.lower() == REQUEST_ID_HEADER:  # the app's own id never goes out: the request's does
                headers[:] = [(k, v) for k, v in headers if k.lower() != REQUEST_ID_HEADER]
                break
        headers.append(observed.header)

    def done(self, exchange: Exchange) -> None:
        observed: Observed = exchange.context
        self._done(exchange.scope, observed.context, exchange.status, time.perf_counter() - observed.started)

    def end(self, token: object) -> None:
        CURRENT_REQUEST.reset(token)  # type: ignore[arg-type]

    def _done(self, scope: Scope, context: RequestContext, status: int, seconds: float) -> None:
        route = self.routes.template(scope["path"])
        metrics.observe_request(scope["method"], route, status, seconds)
        self.lines(
            {
                "event": "request",
                "method": metrics.method_label(scope["method"]),
                "route": route,
                "path": scope["path"][: self.logged_path_max],  # never the query string: it may carry codes or tokens
                "status": status,
                "duration_ms": round(seconds * 1000, 3),
                "request_id": context.request_id,
                "remote": context.remote,
            }
        )
