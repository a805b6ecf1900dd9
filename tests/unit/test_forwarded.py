"""How the client's address and scheme are read behind trusted proxies (service/web/forwarded.py)."""

from __future__ import annotations

import pytest

from service.settings import parse_networks
from service.web.forwarded import TrustedProxies

PROXIES = TrustedProxies.of(["10.0.0.0/24", "fd00::/8"])


def scope(peer: str, *headers: tuple[bytes, bytes]) -> dict[str, object]:
    return {"type": "http", "client": (peer, 5000), "scheme": "http", "headers": list(headers)}


@pytest.mark.parametrize(
    ("forwarded_for", "client"),
    [
        ("198.51.100.1", "198.51.100.1"),
        ("1.2.3.4, 198.51.100.1", "198.51.100.1"),  # the client wrote 1.2.3.4; the proxy saw 198.51.100.1
        ("198.51.100.1, 10.0.0.9", "198.51.100.1"),  # through two trusted proxies
        ("10.0.0.8, 10.0.0.9", "10.0.0.8"),  # every hop trusted: the left-most
        ("198.51.100.1, foo", "10.0.0.2"),  # unparsable: the proxy's own address
        ("010.9.4.1", "10.0.0.2"),  # leading zeros are not an address
        ("198.51.100.1, 010.9.4.1, 10.0.0.9", "10.0.0.9"),  # junk passed on by the trusted 10.0.0.9
        ("[2001:db8::1]", "2001:db8::1"),
        ("", "10.0.0.2"),
    ],
)
def test_right_most_untrusted_forwarded_address_is_the_client(forwarded_for: str, client: str) -> None:
    resolved = PROXIES.resolve(scope("10.0.0.2", (b"x-forwarded-for", forwarded_for.encode())))
    assert resolved["client"] == (client, 0)


def test_forwarded_headers_are_ignored_from_untrusted_peers() -> None:
    sent = scope("203.0.113.1", (b"x-forwarded-for", b"198.51.100.1"), (b"x-forwarded-proto", b"https"))
    assert PROXIES.resolve(sent) is sent
    assert TrustedProxies.of([]).resolve(scope("10.0.0.2", (b"x-forwarded-for", b"1.2.3.4")))["client"][0] == "10.0.0.2"


def test_several_forwarded_for_headers_are_one_list_in_order() -> None:
    sent = scope("10.0.0.2", (b"x-forwarded-for", b"198.51.100.1"), (b"x-forwarded-for", b"198.51.100.2"))
    assert PROXIES.resolve(sent)["client"] == ("198.51.100.2", 0)


@pytest.mark.parametrize(("proto", "scheme"), [(b"https", "https"), (b"HTTP", "http"), (b"gopher", "http")])
def test_forwarded_proto_from_a_trusted_proxy_sets_the_scheme_when_it_is_http_or_https(
    proto: bytes, scheme: str
) -> None:
    assert PROXIES.resolve(scope("10.0.0.2", (b"x-forwarded-proto", proto)))["scheme"] == scheme


def test_an_ipv4_mapped_peer_is_trusted_as_its_ipv4_address() -> None:
    resolved = PROXIES.resolve(scope("::ffff:10.0.0.2", (b"x-forwarded-for", b"198.51.100.1")))
    assert resolved["client"] == ("198.51.100.1", 0)


def test_trusted_proxies_setting_takes_addresses_and_cidr_blocks() -> None:
    assert parse_networks("10.0.0.2, 10.1.0.0/16 fd00::/8") == ("10.0.0.2/32", "10.1.0.0/16", "fd00::/8")
    with pytest.raises(ValueError, match="MENUS_TRUSTED_PROXIES: 'proxy.example' is not an IP address"):
        parse_networks("proxy.example")
