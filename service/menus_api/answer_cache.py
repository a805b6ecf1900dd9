"""A bounded cache of the menus API's finished answers, consulted in front of the routing.

The catalog is loaded once at start-up and never changes while the process
runs, and the cursor key is fixed for the process's life, so an answer to
``GET /v1/menus/dishes?…`` depends only on the path and the query's decoded
``(name, value)`` pairs. Only successful (200) answers of deterministic
operations are kept: a query that fails validation is never stored, so it keeps
reaching Connexion and keeps failing exactly as before; ``/random`` is never
stored. The key is the path and the query pairs as Starlette decodes them,
sorted: ``limit=5&course=main`` and ``course=main&limit=5`` share an entry,
while a repeated or unknown parameter gives a different key (and a 400).

The API-key check, the rate limit and ``If-None-Match`` stay in the gate and
apply to every request, cached or not.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from urllib.parse import parse_qsl

# Operations whose answer is a function of path and query alone (not /random).
CACHEABLE_PATH = re.compile(r"/v1/menus/(?:regions|dishes)(?:/[^/]+)?")

CacheKey = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True, slots=True)
class Answer:
    """A finished 200: the headers Connexion sent, the body, and its strong ETag."""

    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes
    etag: bytes


def cache_key(path: str, query_string: bytes) -> CacheKey | None:
    """The key of a cacheable request, or None when the path's answers must not be cached.

    The pairs are decoded exactly as Starlette (and so Connexion) decodes them.
    """
    if not CACHEABLE_PATH.fullmatch(path):
        return None
    if not query_string:
        return path, ()
    return path, tuple(sorted(parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)))


class AnswerCache:
    """Least-recently-used, bounded both in entries and in body bytes."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries  # distinct URLs kept
        self.max_bytes = max_bytes  # body bytes kept, whatever the number of entries
        self._answers: OrderedDict[CacheKey, Answer] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._answers)

    @property
    def size_in_bytes(self) -> int:
        return self._bytes

    def get(self, key: CacheKey) -> Answer | None:
        answer = self._answers.get(key)
        if answer is not None:
            self._answers.move_to_end(key)
        return answer

    def put(self, key: CacheKey, answer: Answer) -> None:
        if len(answer.body) > self.max_bytes:
            return
        previous = self._answers.pop(key, None)
        if previous is not None:
            self._bytes -= len(previous.body)
        self._answers[key] = answer
        self._bytes += len(answer.body)
        while len(self._answers) > self.max_entries or self._bytes > self.max_bytes:
            _, evicted = self._answers.popitem(last=False)
            self._bytes -= len(evicted.body)
