"""Which web pages may call the token, revocation and userinfo endpoints from another origin (CORS).

A public client registers its web origins (``identity/clients/registry.py``). A request that carries an
``Origin`` header (Fetch §3.1: browsers send it on every cross-origin request, and on same-origin
POSTs) is the request of a page; at the token, revocation and introspection endpoints, the page's
origin must be the issuer's own or one the client registered, else the request is refused before
anything is spent or issued. A page from an unregistered origin could not read the answer anyway
(no ``Access-Control-Allow-Origin``), so a code spent for it would be lost, and its tokens left live.

The preflight and the CORS headers of the answers need the union of every client's origins (a
preflight names no client): it is read from the database at most every ``max_age``, so an origin
added with ``clients update`` answers CORS on every node within that time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from identity.clients.registry import Client, ClientStore
from identity.common.errors import OriginNotAllowed
from identity.common.issuer import Issuer


def origin_of(url: str) -> str:
    """RFC 6454 §6.2: the origin of an http(s) URL, as a browser serializes it in ``Origin``."""
    return "/".join(url.split("/", 3)[:3])


class WebOrigins:
    def __init__(
        self,
        issuer: Issuer,
        clients: ClientStore,
        *,
        enabled: bool,  # MENUS_PUBLIC_CLIENTS: without it no client's origin answers CORS
        max_age: float,  # seconds the union of registered origins is used before it is read again
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer_origin = origin_of(issuer.url)
        self._clients = clients
        self._enabled = enabled
        self._max_age = max_age
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._registered: frozenset[str] = frozenset()
        self._read_at: float | None = None

    def registered(self, origin: str) -> bool:
        """Whether some public client registered ``origin`` (a preflight's question: it names no client)."""
        if not self._enabled:
            return False
        now = self._monotonic()
        if self._read_at is None or now - self._read_at >= self._max_age:
            with self._lock:
                if self._read_at is None or now - self._read_at >= self._max_age:
                    self._registered = self._clients.web_origins()
                    self._read_at = now
        return origin in self._registered

    def check(self, client: Client, origin: str | None) -> None:
        """Refuse the request of a page whose origin is neither the issuer's nor one the client registered."""
        if self._enabled and client.public and origin in client.web_origins:
            return
        self.check_own(client, origin)

    def check_own(self, client: Client, origin: str | None) -> None:
        """Refuse the request of a page of any origin but the issuer's (introspection: never cross-origin)."""
        if origin is None or origin == self.issuer_origin:
            return  # not a page's request, or a page of the provider's own origin
        raise OriginNotAllowed(  # the answer never repeats the Origin sent (docs/security.md); the log names it
            "Pages of this request's origin may not call this endpoint for this client.",
            detail=f"Origin {origin[:200]!r} is not registered for client {client.id}.",
        )
