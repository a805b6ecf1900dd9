"""Where the service itself sends requests (DESIGN.md §9): back-channel logout URIs today, upstream identity
providers next. None may reach inside the deployment: a URI registered by a client's owner must not turn the
service into a way to call what only the service can reach (server-side request forgery).

Refused, at registration and again at delivery:

- **loopback** addresses (``127.0.0.0/8``, ``::1``, and the names ``localhost`` and ``*.localhost``, RFC 6761
  §6.3), unless the node allows loopback (``MENUS_OUTBOUND_LOOPBACK``: for development, on in ``serve --demo`` and
  in the tests) or the operator allowed internal addresses for this target (``--allow-internal``);
- **private** and **unique-local** addresses (RFC 1918, RFC 4193 ``fc00::/7``, and the other private-use blocks
  of the IANA registries), unless the operator allowed internal addresses for this target;
- always: **link-local** addresses (``169.254.0.0/16``, ``fe80::/10``: where cloud metadata services answer, as
  ``169.254.169.254`` and ``fd00:ec2::254`` do), addresses that are not publicly routable (the shared address
  space ``100.64.0.0/10``, where another cloud's metadata answers), reserved, unspecified and multicast ones.

An IPv6 address that carries an IPv4 one (IPv4-mapped ``::ffff:a.b.c.d``, 6to4, Teredo, and NAT64's well-known
prefix, RFC 6052) is judged by the IPv4 address it reaches.

The classes are the standard library's (``ipaddress``: ``is_loopback``, ``is_link_local``, ``is_private``,
``is_reserved``, ``is_global``, ``is_multicast``, ``is_unspecified``, which follow the IANA special-purpose
address registries), never ranges written here.

**At registration** (``check_host``) a host that is an address, or a name that is loopback by definition, is
checked; any other name is checked **at delivery** (``check_resolved``): the name is resolved, every address it
resolves to must pass, and the request is then sent to the checked address itself rather than to the name, so a
name that resolves to a public address when checked and to an internal one a moment later (DNS rebinding) is
never followed there. A module of the domain, without a web framework: the delivery side (service/outbound/)
resolves and connects.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from identity.common.errors import InvalidInput

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# RFC 6052 §2.1: the well-known prefix of NAT64, whose last 32 bits are the IPv4 address reached
NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")


class RefusedAddress(InvalidInput):
    """An outbound URI that reaches, or resolves to, an address the rule refuses; the message says which kind."""


@dataclass(frozen=True, slots=True)
class OutboundRule:
    """What one outbound target may reach."""

    loopback: bool = False  # the node allows loopback addresses (development: MENUS_OUTBOUND_LOOPBACK)
    internal: bool = False  # loopback, private and unique-local addresses too: the operator said so for this target

    def refusal(self, address: Address) -> str | None:
        """Why ``address`` may not be sent to, in words; None when it may."""
        address = reached(address)
        if address.is_unspecified:
            return "an unspecified address"
        if address.is_multicast:
            return "a multicast address"
        if address.is_loopback:
            return None if self.loopback or self.internal else "a loopback address"
        if address.is_link_local:
            return "a link-local address (where cloud metadata services answer)"
        if address.is_reserved:  # before is_private, which holds for 240.0.0.0/4 too
            return "a reserved address"
        if address.is_private:
            if self.internal:
                return None
            return "a private address" if address.version == 4 else "a unique-local or private-use address"
        if not address.is_global:
            return "an address that is not publicly routable"
        return None

    def check_host(self, host: str, what: str) -> None:
        """At registration: ``host`` (a URI's, without brackets) if it is an address or a loopback name;
        ``RefusedAddress`` naming ``what`` (the URI, as the caller shows it) when refused."""
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            name = host.lower().rstrip(".")
            if name == "localhost" or name.endswith(".localhost"):  # RFC 6761 §6.3: always loopback
                address = ipaddress.IPv4Address("127.0.0.1")
            else:
                return  # a name: resolved and checked at delivery
        refusal = self.refusal(address)
        if refusal is not None:
            raise RefusedAddress(f"{what} points to {refusal}; outbound URIs must reach the public internet")

    def check_resolved(self, host: str, addresses: Sequence[Address]) -> Address:
        """At delivery: every address ``host`` resolved to must pass; the first is the one to connect to.
        ``RefusedAddress`` when none was found or one is refused (the host alone is named: the rest of a URI may
        carry something of the client's)."""
        if not addresses:
            raise RefusedAddress(f"{host} resolves to no address")
        for address in addresses:
            refusal = self.refusal(address)
            if refusal is not None:
                raise RefusedAddress(f"{host} resolves to {refusal}")
        return addresses[0]


NO_INTERNAL = OutboundRule()  # the rule of a node in production: only the public internet


def reached(address: Address) -> Address:
    """The IPv4 address an IPv6 one carries and reaches (IPv4-mapped, 6to4, Teredo's client, NAT64), else itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address.teredo is not None:
            return address.teredo[1]
        if address in NAT64_WELL_KNOWN:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address
