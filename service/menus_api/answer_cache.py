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

An entry is one object the garbage collector tracks, the ``Answer``: its key is one ``bytes`` (the path and the
pairs, encoded), its body and ETag are bytes, and its headers, which differ from answer to answer only by their
``Content-Length`` (added as it is sent), are one tuple shared by every answer with the same others. A full cache
replaces an entry on every new query; with a tuple for each key, pair and header, each request left a dozen young
objects behind and freed a dozen old ones, which keeps CPython's young-generation count from growing (a freed
object of any generation counts against it) while the young generation itself grew to 40,000 objects between
collections: each collection then took 5–14 ms, and a full one 55 ms, on one worker under the unique mix
(docs/performance.md, "Where targets are missed").
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl

import orjson

# Operations whose answer is a function of path and query alone (not /random).
CACHEABLE_PATH = re.compile(r"/v1/menus/(?:regions|dishes)(?:/[^/]+)?")

CacheKey = bytes  # the path and the sorted pairs as JSON: one object, which the garbage collector never tracks
SHARED_HEADERS_MAX = 64  # distinct header sets shared between answers; past it, an answer keeps its own

_shared_headers: dict[tuple[tuple[bytes, bytes], ...], tuple[tuple[bytes, bytes], ...]] = {}


@dataclass(frozen=True, slots=True)
class Answer:
    """A finished 200: the headers Connexion sent but ``Content-Length``, the body, and its strong ETag."""

    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes
    etag: bytes

    @classmethod
    def of(cls, headers: Iterable[tuple[bytes, bytes]], body: bytes, etag: bytes) -> Answer:
        """The answer of ``headers`` (as sent: ``Content-Length`` is left out) and ``body``."""
        kept = tuple((name, value) for name, value in headers if name.lower() != b"content-length")
        shared = _shared_headers.get(kept)
        if shared is None:
            shared = kept
            if len(_shared_headers) < SHARED_HEADERS_MAX:
                _shared_headers[kept] = kept
        return cls(shared, body, etag)

    def content_length(self) -> tuple[bytes, bytes]:
        return b"content-length", str(len(self.body)).encode()


def cache_key(path: str, query_string: bytes) -> CacheKey | None:
    """The key of a cacheable request, or None when the path's answers must not be cached.

    The pairs are decoded exactly as Starlette (and so Connexion) decodes them, and sorted.
    """
    if not CACHEABLE_PATH.fullmatch(path):
        return None
    pairs = sorted(parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)) if query_string else ()
    return orjson.dumps((path, pairs))


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
        key = bytes(memoryview(key))  # orjson's bytes keep the 4 KiB buffer they were written in; a copy fits
        previous = self._answers.pop(key, None)
        if previous is not None:
            self._bytes -= len(previous.body)
        self._answers[key] = answer
        self._bytes += len(answer.body)
        while len(self._answers) > self.max_entries or self._bytes > self.max_bytes:
            _, evicted = self._answers.popitem(last=False)
            self._bytes -= len(evicted.body)
