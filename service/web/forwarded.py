"""The client's address and scheme behind reverse proxies the operator trusts (``MENUS_TRUSTED_PROXIES``).

``X-Forwarded-For`` and ``X-Forwarded-Proto`` are read only when the peer that sent the request is one of the
trusted proxies; from anyone else they are ignored, whatever they say (the server runs with its own proxy
handling off: uvicorn trusts 127.0.0.1 by default). Behind trusted proxies, the client is the right-most
address of ``X-Forwarded-For`` that is not itself a trusted proxy: every hop appends the address it saw, so
only the entries added by trusted hops can be believed, and everything left of the first untrusted one was
written by the client. An entry that is not an IP address (``foo``, ``010.9.4.1``, ``unknown``) cannot be a
client of its own: it counts as the address of the proxy that passed it on.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.types import Scope

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network
_Address = ipaddress.IPv4Address | ipaddress.IPv6Address

FORWARDED_FOR = b"x-forwarded-for"
FORWARDED_PROTO = b"x-forwarded-proto"


def _address(value: str) -> _Address | None:
    """An IP address as a proxy writes it (IPv6 maybe in brackets); None for anything else."""
    value = value.strip()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    try:
        return ipaddress.ip_address(value)  # strict: no leading zeros (010.9.4.1), no names, no ports
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class TrustedProxies:
    networks: tuple[_Network, ...]

    @classmethod
    def of(cls, networks: Iterable[str]) -> TrustedProxies:
        return cls(tuple(ipaddress.ip_network(network, strict=False) for network in networks))

    def trusts(self, address: _Address) -> bool:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self.networks)

    def resolve(self, scope: Scope) -> Scope:
        """``scope`` with the client's address and scheme as the trusted proxies saw them (``scope`` itself when
        the peer is not a trusted proxy or sent no forwarded header)."""
        client = scope.get("client")
        peer = _address(client[0]) if client else None
        if not self.networks or peer is None or not self.trusts(peer):
            return scope
        forwarded_for: list[str] = []
        proto: str | None = None
        for name, value in scope["headers"]:
            if name == FORWARDED_FOR:  # several headers are one list, in order (RFC 9110 §5.3)
                forwarded_for.extend(value.decode("latin-1").split(","))
            elif name == FORWARDED_PROTO:
                proto = value.decode("latin-1").split(",")[-1].strip().lower()
        changes: dict[str, object] = {}
        if forwarded_for:
            changes["client"] = (str(self.client_of(peer, forwarded_for)), 0)
        if proto in ("http", "https"):
            changes["scheme"] = proto
        return {**scope, **changes} if changes else scope

    def client_of(self, peer: _Address, forwarded_for: list[str]) -> _Address:
        """The right-most untrusted address of the chain ``forwarded_for`` + ``peer``; an unparsable entry ends
        the walk at the trusted proxy that passed it on."""
        client = peer
        for entry in reversed(forwarded_for):
            address = _address(entry)
            if address is None:
                return client  # the proxy's own address
            client = address
            if not self.trusts(address):
                return client
        return client
