"""What stands in front of the menus API's routing: API key, rate limit, and HTTP caching.

Every request under ``/v1/menus`` is authenticated and counted here, before
Connexion routes it, so the check can never be skipped by a route and costs
one indexed lookup. Successful answers get a strong ``ETag`` and
``Cache-Control``; a matching ``If-None-Match`` turns them into 304.
"""

from __future__ import annotations

import hashlib
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from data.catalog import Catalog
from service.api_keys import ApiKeyStore
from service.problems import Problem, nothing_here, unauthorized
from service.ratelimit import Decision, RateLimiter

CACHE_CONTROL = (b"cache-control", b"private, max-age=300")


class MenusGate:
    def __init__(
        self, app: ASGIApp, *, keys: ApiKeyStore, limiter: RateLimiter, catalog: Catalog, prefix: str = "/v1/menus"
    ) -> None:
        self.app = app
        self.keys = keys
        self.limiter = limiter
        self.catalog = catalog
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        token = _bearer_token(headers.get(b"authorization"))
        key_id = self.keys.authenticate(token) if token else None  # a database error becomes 503 in _guarded
        if key_id is None:
            await send_problem(send, unauthorized(key_sent=b"authorization" in headers))
            return
        decision = self.limiter.take(key_id)
        if not decision.allowed:
            seconds = "second" if decision.retry_after == 1 else "seconds"
            problem = Problem(
                429,
                "rate_limited",
                f"This API key allows {decision.limit} requests a minute; "
                f"retry after {decision.retry_after} {seconds}.",
                headers={"Retry-After": str(decision.retry_after)},
            )
            await send_problem(send, problem, decision.headers())
            return
        if scope["path"].endswith("/"):
            # One URL per resource: /dishes/ is not /dishes (and would split caches).
            await send_problem(send, nothing_here(), decision.headers())
            return
        scope.setdefault("state", {})["catalog"] = self.catalog
        await self.app(scope, receive, _Caching(send, decision, headers.get(b"if-none-match")))


class _Caching:
    """Wraps ``send``: adds rate-limit headers to every answer, ETag and caching to 200s, and 304s."""

    def __init__(self, send: Send, decision: Decision, if_none_match: bytes | None) -> None:
        self.send = send
        self.decision = decision
        self.if_none_match = if_none_match
        self.start: dict[str, Any] | None = None
        self.body: list[bytes] = []

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", [])) + self.decision.headers()
            message = {**message, "headers": headers}
            if message["status"] == 200:
                self.start = message
                return
        elif message["type"] == "http.response.body" and self.start is not None:
            self.body.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            await self._finish_200()
            return
        await self.send(message)

    async def _finish_200(self) -> None:
        assert self.start is not None
        body = b"".join(self.body)
        etag = b'"' + hashlib.blake2b(body, digest_size=16).hexdigest().encode() + b'"'
        validators = [(b"etag", etag), CACHE_CONTROL]
        if self.if_none_match is not None and _matches(self.if_none_match, etag):
            kept = [(k, v) for k, v in self.start["headers"] if k.lower() not in (b"content-type", b"content-length")]
            await self.send({"type": "http.response.start", "status": 304, "headers": kept + validators})
            await self.send({"type": "http.response.body", "body": b""})
            return
        await self.send({**self.start, "headers": self.start["headers"] + validators})
        await self.send({"type": "http.response.body", "body": body})


async def send_problem(send: Send, problem: Problem, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = problem.body()
    headers = problem.asgi_headers() + [(b"content-length", str(len(body)).encode())] + (extra or [])
    await send({"type": "http.response.start", "status": problem.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _headers(scope: Scope) -> dict[bytes, bytes]:
    return {name.lower(): value for name, value in scope["headers"]}


def _bearer_token(value: bytes | None) -> str | None:
    """RFC 6750 §2.1: ``Bearer <token>``; the scheme is case-insensitive."""
    if not value:
        return None
    scheme, _, token = value.decode("latin-1").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def _matches(if_none_match: bytes, etag: bytes) -> bool:
    """RFC 9110 §13.1.2: ``*`` alone, or weak comparison against each listed tag."""
    if if_none_match.strip() == b"*":
        return True
    return any(tag.strip().removeprefix(b"W/") == etag for tag in if_none_match.split(b","))
