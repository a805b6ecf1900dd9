"""The requests to an organization's provider (service/outbound/upstream.py): the outbound rule, the checked address,
no redirect followed, and the answer's size bound."""

from __future__ import annotations

import ipaddress

import httpx
import pytest

from identity.common.outbound_uris import Address
from identity.federation.errors import UpstreamUnavailable
from identity.federation.upstream_http import MAX_ANSWER
from service.outbound.upstream import UpstreamRequests

PUBLIC = ipaddress.ip_address("93.184.215.14")


def resolver(*addresses: Address):  # type: ignore[no-untyped-def]
    return lambda host, port: list(addresses)


def requests_to(handler, *addresses: Address, loopback: bool = False) -> UpstreamRequests:  # type: ignore[no-untyped-def]
    return UpstreamRequests(
        timeout=5, loopback=loopback, resolver=resolver(*addresses), transport=httpx.MockTransport(handler)
    )


def test_the_request_goes_to_the_checked_address_with_the_host_named() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"ok": True})

    answer = requests_to(handler, PUBLIC).get("https://id.corp.example/jwks", bearer="tok")
    assert answer.status == 200 and answer.content_type == "application/json"
    assert seen[0].url.host == "93.184.215.14" and seen[0].headers["host"] == "id.corp.example"
    assert seen[0].headers["authorization"] == "Bearer tok"


def test_basic_credentials_are_form_encoded_first() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={})

    requests_to(handler, PUBLIC).post_form("https://id.corp.example/token", {"a": "b"}, basic=("c d", "e:f"))
    # RFC 6749 §2.3.1: "c%20d:e%3Af" in Basic
    assert seen[0].headers["authorization"] == "Basic YyUyMGQ6ZSUzQWY="
    assert seen[0].content == b"a=b"


def test_a_redirect_is_handed_back_not_followed() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url))
        return httpx.Response(302, headers={"Location": "http://169.254.169.254/latest"})

    assert requests_to(handler, PUBLIC).get("https://id.corp.example/.well-known/openid-configuration").status == 302
    assert len(calls) == 1


def test_an_answer_over_the_bound_is_refused() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"x" * (MAX_ANSWER + 1))

    with pytest.raises(UpstreamUnavailable, match="larger"):
        requests_to(handler, PUBLIC).get("https://id.corp.example/jwks")


@pytest.mark.parametrize("address", ["10.0.0.8", "169.254.169.254", "127.0.0.1", "fd00:ec2::254"])
def test_an_internal_address_is_refused_before_any_request(address: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise AssertionError("no request may be sent")

    with pytest.raises(UpstreamUnavailable, match="may not reach"):
        requests_to(handler, ipaddress.ip_address(address)).get("https://id.corp.example/jwks")


def test_loopback_is_reached_where_the_node_allows_it() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={})

    loopback = ipaddress.ip_address("127.0.0.1")
    assert requests_to(handler, loopback, loopback=True).get("http://127.0.0.1:9000/jwks").status == 200


def test_no_answer_is_a_page_not_an_exception_of_httpx() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    with pytest.raises(UpstreamUnavailable, match="did not answer"):
        requests_to(handler, PUBLIC).get("https://id.corp.example/jwks")
