"""The one resolution of both outbound clients (service/outbound/addresses.py): every address a host resolves to,
each once, without an IPv6 zone, for the outbound rule to judge."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

from identity.common.outbound_uris import OutboundRule, RefusedAddress
from service.outbound.addresses import Destination, addresses_of, destination_of


def answering(*hosts: str):  # type: ignore[no-untyped-def]
    """A resolver that answers ``hosts`` (as ``getaddrinfo`` does: one entry per address and socket kind)."""

    def lookup(host: str, port: int, **_: Any) -> list[tuple[Any, ...]]:
        found = []
        for each in hosts:
            family = socket.AF_INET6 if ":" in each else socket.AF_INET
            sockaddr = (each, port, 0, 0) if family == socket.AF_INET6 else (each, port)
            found.append((family, socket.SOCK_STREAM, 6, "", sockaddr))
        return found

    return lookup


def test_each_address_is_given_once_in_the_resolvers_order() -> None:
    lookup = answering("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "93.184.215.14")
    assert addresses_of("rp.example.com", 443, lookup=lookup) == [
        ipaddress.ip_address("93.184.215.14"),
        ipaddress.ip_address("2606:2800:21f:cb07:6820:80da:af6b:8b2c"),
    ]


def test_an_ipv6_zone_is_dropped_so_a_link_local_address_is_judged_and_refused() -> None:
    found = addresses_of("rp.example.com", 443, lookup=answering("fe80::1%eth0", "fe80::1%eth1"))
    assert found == [ipaddress.ip_address("fe80::1")]
    with pytest.raises(RefusedAddress, match="rp.example.com resolves to"):
        OutboundRule(loopback=False).check_resolved("rp.example.com", found)


def test_the_system_resolver_reads_an_address_literal_as_itself() -> None:
    assert addresses_of("127.0.0.1", 80) == [ipaddress.ip_address("127.0.0.1")]


def test_a_destination_is_the_uris_host_its_port_or_its_schemes_and_its_authority_without_user_information() -> None:
    assert destination_of("https://user:pw@rp.example/logout") == Destination("rp.example", 443, "rp.example")
    assert destination_of("http://127.0.0.1:8080/bcl") == Destination("127.0.0.1", 8080, "127.0.0.1:8080")
    assert destination_of("https://[::1]:9443/x") == Destination("::1", 9443, "[::1]:9443")
