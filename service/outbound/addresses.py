"""The addresses a host name resolves to, for the outbound rule (identity/common/outbound_uris.py) to check.

Both outbound clients, the back-channel logout posts (``backchannel.py``) and the requests to an organization's
provider (``upstream.py``), resolve the host of a URI once, check every address it resolves to, and then connect to
a checked address itself (so the name is never resolved again: DNS rebinding). This is that one resolution,
synchronous: the requests to a provider run in a request's worker thread already, and the logout posts call it off
the event loop through the one way off it (``service.web.offload.in_background``).
``destination_of`` is what both read of the URI first: the host to resolve, its port, and the ``Host`` to send.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from identity.common.outbound_uris import Address

Lookup = Callable[..., Sequence[tuple[Any, ...]]]  # ``socket.getaddrinfo``'s shape


def addresses_of(host: str, port: int, *, lookup: Lookup = socket.getaddrinfo) -> list[Address]:
    """Every address ``host`` resolves to for a TCP connection, in the resolver's order, each once. An IPv6 zone
    (``fe80::1%eth0``) is not part of the address: the rule judges the address alone, and link-local is refused
    whatever the interface. ``lookup``: the resolver (tests give one that answers what they say)."""
    addresses: list[Address] = []
    for _family, _type, _proto, _name, sockaddr in lookup(host, port, type=socket.SOCK_STREAM):
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


@dataclass(frozen=True, slots=True)
class Destination:
    """Where a request to a URI goes, before its host is resolved."""

    host: str  # resolved, checked by the rule, and TLS's server name
    port: int  # the URI's, else its scheme's
    host_header: str  # the URI's authority without user information: the ``Host`` the request carries


def destination_of(uri: str) -> Destination:
    parts = urlsplit(uri)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return Destination(parts.hostname or "", port, parts.netloc.rpartition("@")[2])
