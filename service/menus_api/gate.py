"""What stands in front of the menus API's routing: API key, rate limit, HTTP caching, and the answer cache.

Every request under ``/v1/menus`` is authenticated and counted here, before
Connexion routes it, so the check can never be skipped by a route; a key
this process has seen live is answered from memory
(``service/menus_api/key_cache.py``). Successful answers get a strong ``ETag`` and
``Cache-Control``; a matching ``If-None-Match`` turns them into 304.

A successful answer of a deterministic operation is kept in a bounded
``AnswerCache`` (see ``service/menus_api/answer_cache.py``): the same URL is then answered
without routing, validating or serialising again, but only after the key check
and the rate limit, and with the same headers, ETag and 304 as the first time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from starlette.types import Message, Receive, Scope, Send

from data.catalog import Catalog
from identity.tokens.bearer_tokens import bearer_credentials
from service.menus_api.answer_cache import Answer, AnswerCache, CacheKey, cache_key
from service.menus_api.key_cache import KeyCache
from service.menus_api.key_failures import KeyFailures
from service.menus_api.menus_problems import unauthorized
from service.menus_api.rate_limiter import Decision, RateLimiter
from service.web.edge import Exchange
from service.web.etags import none_match, strong_etag
from service.web.problems import Problem, nothing_here, send_problem
from service.web.request_state import Slot

CATALOG: Slot[Catalog] = Slot("catalog")  # the dish catalog the menus handlers read
# The menus API's URL from the settings (MENUS_BASE_URL + "/v1"), never from the Host header.
API_URL: Slot[str] = Slot("api_url")

CACHE_CONTROL = (b"cache-control", b"private, max-age=300")
NO_STORE = (b"cache-control", b"no-store")  # /random: a cache must never replay a random pick
# The response headers added here, after Connexion's response validation: left out of it (checked end to end).
ADDED_HEADERS = frozenset({"etag", "cache-control", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"})
_ANSWERED = "\0answered"  # _authenticate's mark: the request was answered (never a key id: ids are key_<hex>)
IF_NONE_MATCH_MAX = 1024  # the contract's maxLength of If-None-Match: longer ones must still reach validation


class MenusGate:
    """The menus API's step at the edge (``service/web/edge.py``), before Connexion's routing."""

    def __init__(
        self,
        *,
        keys: KeyCache,
        limiter: RateLimiter,
        catalog: Catalog,
        answers: AnswerCache,
        api_url: str,  # the menus API's address from the settings: the base of the Link header's URLs
        prefix: str = "/v1/menus",
        if_none_match_max: int = IF_NONE_MATCH_MAX,
        count: Callable[[str, int], None] | None = None,  # usage: counts a key's answer by its status
        failures: KeyFailures | None = None,  # unknown keys per network (service/menus_api/key_failures.py)
    ) -> None:
        self.keys = keys
        self.limiter = limiter
        self.catalog = catalog
        self.answers = answers
        self.api_url = api_url
        self.prefix = prefix
        self.if_none_match_max = if_none_match_max
        self.random = prefix + "/random"
        self.count = count
        self.failures = failures

    async def __call__(self, scope: Scope, receive: Receive, exchange: Exchange) -> tuple[Scope, Receive] | None:
        if not scope["path"].startswith(self.prefix):
            return scope, receive
        headers = _headers(scope)
        token = _bearer_token(headers.get(b"authorization"))
        key_id = await self._authenticate(scope, exchange, token) if token else None
        if key_id is _ANSWERED:
            return None
        if key_id is None:
            await send_problem(exchange, unauthorized(_scheme(headers.get(b"authorization"))))
            return None
        if self.count is not None:
            # usage and last use, counted in memory as the answer starts (identity/api_keys/usage.py)
            exchange.on_start.append(functools.partial(_counted, self.count, key_id))
        decision = await self.limiter.take(key_id)
        if not decision.allowed:
            seconds = "second" if decision.retry_after == 1 else "seconds"
            problem = Problem(
                429,
                "rate_limited",
                f"This API key allows {decision.limit} requests a minute; "
                f"retry after {decision.retry_after} {seconds}.",
                headers={"Retry-After": str(decision.retry_after)},
            )
            await send_problem(exchange, problem, decision.headers())
            return None
        if scope["path"].endswith("/"):
            # One URL per resource: /dishes/ is not /dishes (and would split caches).
            await send_problem(exchange, nothing_here(), decision.headers())
            return None
        if_none_match = headers.get(b"if-none-match")
        key = self._cache_key(scope, if_none_match)
        if key is not None:
            answer = self.answers.get(key)
            if answer is not None:
                await send_ok(exchange, answer, decision, if_none_match)
                return None
        CATALOG.put(scope, self.catalog)
        API_URL.put(scope, self.api_url)
        if scope["path"] == self.random:
            exchange.filter = _Caching(decision, None, no_store=True)
        else:
            store = self.answers if key is not None else None
            exchange.filter = _Caching(decision, if_none_match, store, key)
        return scope, receive

    async def _authenticate(self, scope: Scope, send: Send, token: str) -> str | None:
        """The id of the live key ``token``, or None; ``_ANSWERED`` when its network was answered 429 for
        guessing keys. A database error becomes 503 at the edge (``service/web/edge.py``)."""
        if self.failures is None:
            return await self.keys.authenticate(token)
        address = scope["client"][0] if scope.get("client") else "unknown"
        blocked = self.failures.blocked(address)
        if blocked and not await self.failures.worth_checking(token):
            await self._too_many_unknown_keys(send, blocked)
            return _ANSWERED
        key_id = await self.keys.authenticate(token)
        if key_id is None:
            decision = await self.failures.failed(address, token)
            if decision is not None:
                await self._too_many_unknown_keys(send, decision.retry_after)
                return _ANSWERED
        return key_id

    async def _too_many_unknown_keys(self, send: Send, retry_after: int) -> None:
        assert self.failures is not None
        seconds = "second" if retry_after == 1 else "seconds"
        problem = Problem(
            429,
            "rate_limited",
            f"Too many requests with unknown API keys from this network; retry after {retry_after} {seconds}.",
            headers={"Retry-After": str(retry_after)},
        )
        limit = Decision(False, self.failures.limit, 0, retry_after, retry_after)
        await send_problem(send, problem, limit.headers())

    def _cache_key(self, scope: Scope, if_none_match: bytes | None) -> CacheKey | None:
        """The answer-cache key, or None when this request must go through routing and validation."""
        if scope["method"] != "GET":
            return None
        if if_none_match is not None and len(if_none_match) > self.if_none_match_max:
            return None  # a header the contract refuses: let validation answer 400
        return cache_key(scope["path"], scope.get("query_string", b""))


class _Caching:
    """The exchange's filter: adds rate-limit headers to every answer, ETag and caching to 200s, and 304s.

    A 200 is kept in ``store`` under ``key`` when both are given. With ``no_store`` a 200 goes out as it
    comes, with ``Cache-Control: no-store`` and without an ETag.
    """

    def __init__(
        self,
        decision: Decision,
        if_none_match: bytes | None,
        store: AnswerCache | None = None,
        key: CacheKey | None = None,
        *,
        no_store: bool = False,
    ) -> None:
        self.no_store = no_store
        self.decision = decision
        self.if_none_match = if_none_match
        self.store = store
        self.key = key
        self.start: Message | None = None
        self.body: list[bytes] = []

    def __call__(self, message: Message) -> list[Message]:
        if message["type"] == "http.response.start":
            if message["status"] == 200 and not self.no_store:
                self.start = message
                return []
            extra = [NO_STORE] if message["status"] == 200 else []  # no_store: no ETag, never a 304
            message = {**message, "headers": list(message.get("headers", [])) + self.decision.headers() + extra}
        elif message["type"] == "http.response.body" and self.start is not None:
            self.body.append(message.get("body", b""))
            if message.get("more_body", False):
                return []
            return self._finish_200()
        return [message]

    def _finish_200(self) -> list[Message]:
        assert self.start is not None
        body = b"".join(self.body)
        answer = Answer.of(self.start.get("headers", ()), body, strong_etag(body))
        if self.store is not None and self.key is not None:
            self.store.put(self.key, answer)
        return ok_messages(answer, self.decision, self.if_none_match)


def ok_messages(answer: Answer, decision: Decision, if_none_match: bytes | None) -> list[Message]:
    """A 200 (or its 304) with the rate-limit headers, ETag and Cache-Control: one path for fresh and cached."""
    validators = [(b"etag", answer.etag), CACHE_CONTROL]
    if if_none_match is not None and none_match(if_none_match, answer.etag):
        kept = [(k, v) for k, v in answer.headers if k.lower() != b"content-type"] + decision.headers()
        return [
            {"type": "http.response.start", "status": 304, "headers": kept + validators},
            {"type": "http.response.body", "body": b""},
        ]
    headers = [*answer.headers, answer.content_length(), *decision.headers(), *validators]
    return [
        {"type": "http.response.start", "status": 200, "headers": headers},
        {"type": "http.response.body", "body": answer.body},
    ]


async def send_ok(send: Send, answer: Answer, decision: Decision, if_none_match: bytes | None) -> None:
    for message in ok_messages(answer, decision, if_none_match):
        await send(message)


def _counted(count: Callable[[str, int], None], key_id: str, exchange: Exchange, _: list[tuple[bytes, bytes]]) -> None:
    count(key_id, exchange.status)


def _headers(scope: Scope) -> dict[bytes, bytes]:
    return {name.lower(): value for name, value in scope["headers"]}


def _bearer_token(value: bytes | None) -> str | None:
    """RFC 6750 §2.1: ``Bearer <token>`` (identity/tokens/bearer_tokens.py); None without a token."""
    if not value:
        return None
    return bearer_credentials(value.decode("latin-1")) or None


def _scheme(value: bytes | None) -> str | None:
    """The authentication scheme of an ``Authorization`` header, lower case; None without one."""
    if not value or not value.strip():
        return None
    return value.decode("latin-1").strip().partition(" ")[0].lower()
