"""Guessing API keys: failed key lookups are throttled per network, and a valid key is still answered.

Every well-formed key that is not a live key costs a database lookup. Such failures are counted per network
(an IPv4 address or an IPv6 /64, as the sign-in throttle counts: ``identity.accounts.throttle.network``) by a
``RateLimiter`` of their own: ``MENUS_KEY_FAILURES_PER_MINUTE`` a minute (a sliding window counter), in
process memory or in Redis with the per-key limit (``MENUS_RATE_LIMIT_STORAGE``; failing open as it does).
Past the bound the network is *blocked* in this process until its window lets one more through, and
answered 429 ``rate_limited`` with ``Retry-After``.

While a network is blocked its keys are not looked up one by one. Each is checked first against the set of
live keys' digests (``ApiKeyStore.live_digests``), read at most once per ``live_keys_max_age`` (one second)
and only while some network is blocked: a key not in it gets 429 at no database cost; a key in it is looked
up as usual (so revocation still applies at once) and answered. A valid key from a blocked network (a NAT
shared with a guesser) is therefore still answered, and one from any other network is never affected. A
key created on another node less than a second ago may get 429 from a blocked network for that second.
"""

from __future__ import annotations

import time
from collections import OrderedDict

from identity.accounts.throttle import network
from identity.api_keys.keys import KEY_FORMAT, ApiKeyStore, hash_key
from service.menus_api.rate_limiter import Decision, RateLimiter
from service.web.offload import in_thread

PREFIX = "unknown-key:"  # the failure windows' keys, apart from the per-key windows


class KeyFailures:
    def __init__(self, limiter: RateLimiter, keys: ApiKeyStore, *, live_keys_max_age: float, networks: int) -> None:
        self._limiter = limiter
        self._keys = keys
        self._max_age = live_keys_max_age
        self._networks = networks  # blocked networks remembered at most (the oldest block is forgotten first)
        self._blocked: OrderedDict[str, float] = OrderedDict()  # network -> monotonic time its block ends
        self._live: frozenset[str] = frozenset()
        self._live_read_at = -float("inf")

    @property
    def limit(self) -> int:
        return self._limiter.limit

    def blocked(self, address: str) -> int:
        """Whole seconds the network of ``address`` stays blocked here (0: not blocked)."""
        if not self._blocked:  # the usual case, on every request: no network to work out
            return 0
        key = network(address)
        until = self._blocked.get(key)
        if until is None:
            return 0
        left = until - time.monotonic()
        if left <= 0:
            del self._blocked[key]
            return 0
        return max(1, int(left + 0.999))

    async def worth_checking(self, token: str) -> bool:
        """For a blocked network: whether ``token`` goes on to the usual check. A malformed key does (it is
        refused there without a lookup: 401), a well-formed one only when it is among the live keys as read at
        most ``live_keys_max_age`` ago (no lookup per key)."""
        if not KEY_FORMAT.fullmatch(token):
            return True
        if time.monotonic() - self._live_read_at > self._max_age:
            self._live = await in_thread(self._keys.live_digests)
            self._live_read_at = time.monotonic()
        return hash_key(token) in self._live

    async def failed(self, address: str, token: str) -> Decision | None:
        """A presented key was not a live key: count it against its network when it cost a lookup (a well-formed
        key). The decision when this failure is past the bound (the network is now blocked), else None."""
        if not KEY_FORMAT.fullmatch(token):
            return None  # refused without a lookup: nothing to slow down
        key = network(address)
        decision = await self._limiter.take(PREFIX + key)
        if decision.allowed:
            return None
        self._blocked[key] = time.monotonic() + decision.retry_after
        self._blocked.move_to_end(key)
        while len(self._blocked) > self._networks:
            self._blocked.popitem(last=False)
        return decision
