"""The providers' signing keys (their JWKS), kept in memory per connection.

A key set is fetched on first use, used for ``max_age``, and fetched again when a token names a key it does not
hold (the provider rotated), but never more often than once per ``min_refresh`` for one connection: a stream of
tokens with made-up ``kid`` values cannot turn us into a tool that hammers the provider. A set fetched for a
``jwks_uri`` serves only that URI: a connection whose discovery changed gets a fresh one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from identity.federation.errors import UpstreamUnavailable
from identity.federation.upstream_http import UpstreamHttp, json_object

MAX_KEYS = 50  # keys of one provider's set at most


@dataclass(frozen=True, slots=True)
class _Fetched:
    uri: str
    keys: KeySet
    at: float  # on the monotonic clock


def parse_key_set(document: dict[str, Any]) -> KeySet:
    """The public keys of a JWKS document (RFC 7517 §5); private parts and unknown key types are left out."""
    keys = document.get("keys")
    if not isinstance(keys, list) or not keys or len(keys) > MAX_KEYS:
        raise UpstreamUnavailable("The provider's key set is empty or malformed.", detail="jwks: keys")
    try:
        imported = KeySet.import_key_set({"keys": [key for key in keys if isinstance(key, dict)]})
        return KeySet.import_key_set(imported.as_dict(private=False))
    except (JoseError, ValueError, TypeError, KeyError) as error:
        raise UpstreamUnavailable(
            "The provider's key set is malformed.", detail=f"jwks: {type(error).__name__}"
        ) from None


class KeySets:
    def __init__(
        self, http: UpstreamHttp, monotonic: Callable[[], float], *, max_age: float, min_refresh: float
    ) -> None:
        self._http = http
        self._monotonic = monotonic
        self.max_age = max_age  # seconds a fetched set is used before it is fetched again
        self.min_refresh = min_refresh  # seconds between two fetches for one connection, at least
        self._sets: dict[str, _Fetched] = {}
        self._lock = threading.Lock()

    def get(self, connection_id: str, jwks_uri: str) -> KeySet:
        """The connection's key set: the one kept while it is fresh, else fetched."""
        kept = self._sets.get(connection_id)
        if kept is not None and kept.uri == jwks_uri and self._monotonic() - kept.at < self.max_age:
            return kept.keys
        return self._fetch(connection_id, jwks_uri, kept)

    def refreshed(self, connection_id: str, jwks_uri: str) -> KeySet | None:
        """The set fetched again after a token named an unknown key; None when one was fetched too recently."""
        kept = self._sets.get(connection_id)
        if kept is not None and kept.uri == jwks_uri and self._monotonic() - kept.at < self.min_refresh:
            return None
        return self._fetch(connection_id, jwks_uri, kept)

    def _fetch(self, connection_id: str, jwks_uri: str, kept: _Fetched | None) -> KeySet:
        with self._lock:
            current = self._sets.get(connection_id)
            if current is not kept and current is not None and current.uri == jwks_uri:
                return current.keys  # another thread fetched it meanwhile
            at = self._monotonic()
            if kept is not None and kept.uri == jwks_uri:
                # even a failed fetch counts: a provider that is down is not asked again at once
                self._sets[connection_id] = _Fetched(jwks_uri, kept.keys, at)
            keys = parse_key_set(json_object(self._http.get(jwks_uri), "key set"))
            self._sets[connection_id] = _Fetched(jwks_uri, keys, at)
            return keys

    def forget(self, connection_id: str) -> None:
        self._sets.pop(connection_id, None)
