"""One logout token's POST (service/outbound/backchannel.py), against httpx's mock transport: the URI's host is
resolved once, every address checked (identity/common/outbound_uris.py), and the request sent to the checked address
with the URI's host in ``Host`` and TLS's server name; and the server's log never carries the URI."""

from __future__ import annotations

import asyncio
import io
import ipaddress
import logging
from collections.abc import Iterator

import httpx
import pytest

from identity.common.outbound_uris import Address, RefusedAddress
from identity.tokens.logout_tokens import LogoutPost
from service.ops import logs
from service.outbound.backchannel import LogoutPoster


class Resolver:
    """A name server the test writes: each host resolves to the addresses given, and each question is counted."""

    def __init__(self, **answers: list[str]) -> None:
        self.answers = {
            host.replace("_", "."): [ipaddress.ip_address(each) for each in found] for host, found in answers.items()
        }
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[Address]:
        self.asked.append(host)
        return self.answers.get(host, [])


class Endpoint:
    """httpx's mock transport, keeping each request it is sent."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.transport = httpx.MockTransport(self.answer)

    def answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200)


def post(poster: LogoutPoster, uri: str, *, internal: bool = False) -> int:
    return asyncio.run(poster.post(LogoutPost(uri, "a.logout.token", internal)))


def test_the_post_goes_to_the_checked_address_with_the_uris_host_and_the_name_is_resolved_once() -> None:
    resolver, endpoint = Resolver(rp_example_com=["93.184.215.14"]), Endpoint()
    poster = LogoutPoster(timeout=5, resolver=resolver, transport=endpoint.transport)
    assert post(poster, "https://rp.example.com:8443/logout?tenant=7") == 200
    [sent] = endpoint.requests
    assert sent.url.host == "93.184.215.14" and sent.url.port == 8443 and sent.url.raw_path == b"/logout?tenant=7"
    assert sent.headers["host"] == "rp.example.com:8443"
    assert sent.extensions["sni_hostname"] == "rp.example.com"  # the certificate is checked for the name
    assert sent.content == b"logout_token=a.logout.token"
    assert resolver.asked == ["rp.example.com"]


def test_a_name_that_resolves_to_an_internal_address_is_never_posted_to() -> None:
    """DNS rebinding: a name registered as public that now resolves inside (or partly inside) the network."""
    endpoint = Endpoint()
    for answers in (["10.0.0.7"], ["93.184.215.14", "169.254.169.254"], ["127.0.0.1"]):
        poster = LogoutPoster(timeout=5, resolver=Resolver(rp_example_com=answers), transport=endpoint.transport)
        with pytest.raises(RefusedAddress, match="rp.example.com resolves to"):
            post(poster, "https://rp.example.com/logout")
    assert endpoint.requests == []


def test_loopback_is_posted_to_where_the_node_allows_it_and_internal_addresses_where_the_operator_did() -> None:
    endpoint = Endpoint()
    resolver = Resolver(rp_example_com=["127.0.0.1"], rp_internal=["10.0.0.7"])
    development = LogoutPoster(timeout=5, loopback=True, resolver=resolver, transport=endpoint.transport)
    assert post(development, "http://rp.example.com:9000/logout") == 200
    with pytest.raises(RefusedAddress):
        post(development, "https://rp.internal/logout")
    production = LogoutPoster(timeout=5, resolver=resolver, transport=endpoint.transport)
    assert post(production, "https://rp.internal/logout", internal=True) == 200
    assert [str(r.url.host) for r in endpoint.requests] == ["127.0.0.1", "10.0.0.7"]


def test_an_ipv6_address_is_connected_to_in_brackets() -> None:
    endpoint = Endpoint()
    resolver = Resolver(rp_example_com=["2606:4700:4700::1111"])
    poster = LogoutPoster(timeout=5, resolver=resolver, transport=endpoint.transport)
    assert post(poster, "https://rp.example.com/logout") == 200
    assert str(endpoint.requests[0].url).startswith("https://[2606:4700:4700::1111]/logout")


@pytest.fixture
def server_logging() -> Iterator[io.StringIO]:
    """The server's logging set-up (``serve``'s), writing to a buffer; the process's own put back afterwards."""
    root = logging.getLogger()
    saved = [(logger, logger.handlers[:], logger.level, logger.propagate) for logger in (root, *_named())]
    stream = io.StringIO()
    logs.configure(stream=stream)
    yield stream
    for logger, handlers, level, propagate in saved:
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate


def _named() -> list[logging.Logger]:
    return [logging.getLogger(name) for name in (*logs.SERVER_LOGGERS, *logs.SERVICE_LOGGERS, "httpx", "httpcore")]


def test_httpxs_own_request_line_never_writes_a_logout_uri_to_the_servers_log(server_logging: io.StringIO) -> None:
    """httpx logs each request at INFO with its whole URL, query included; the service trims URIs on purpose."""
    endpoint = Endpoint()
    poster = LogoutPoster(timeout=5, resolver=Resolver(rp_example_com=["93.184.215.14"]), transport=endpoint.transport)
    post(poster, "https://rp.example.com/logout?tenant=secret-tenant-7")
    logging.getLogger("httpx").warning("a warning of httpx is kept")
    for handler in logging.getLogger().handlers:
        handler.flush()
    written = server_logging.getvalue()
    assert endpoint.requests and "secret-tenant-7" not in written and "/logout" not in written
    assert "a warning of httpx is kept" in written


def test_gunicorns_workers_get_the_same_level_for_httpx() -> None:
    assert logs.dict_config()["loggers"]["httpx"]["level"] == "WARNING"
