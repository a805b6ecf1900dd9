"""The outbound URI rule (identity/common/outbound_uris.py): which addresses the service may send requests to, at
registration (a client's back-channel logout URI, by the domain and by the command line) and at delivery."""

from __future__ import annotations

import ipaddress
import json

import pytest
from sqlalchemy.engine import Engine

from identity.accounts.organizations import OrganizationStore
from identity.clients.registry import ClientStore
from identity.common.outbound_uris import NO_INTERNAL, OutboundRule, RefusedAddress
from service.cli.commands import run

ON_BOTH_ENGINES = True  # the tests that use the state database run on SQLite and on PostgreSQL

LOOPBACK = OutboundRule(loopback=True)  # a development node (MENUS_OUTBOUND_LOOPBACK)
INTERNAL = OutboundRule(internal=True)  # a target the operator allowed to be internal (--allow-internal)

ALWAYS_REFUSED = [
    "169.254.169.254",  # the metadata service of most clouds (link-local)
    "fe80::1",  # link-local
    "100.100.100.200",  # a cloud's metadata service in the shared address space (RFC 6598): not routable
    "0.0.0.0",
    "::",
    "224.0.0.1",  # multicast
    "ff02::1",
    "240.0.0.1",  # reserved
]
INTERNAL_ONLY = [
    "10.0.0.1",
    "172.16.5.4",
    "192.168.1.1",
    "fd00:ec2::254",  # unique-local (a cloud's IPv6 metadata address)
    "fc00::1",
    "::ffff:10.0.0.1",  # IPv4-mapped: judged by the IPv4 address it reaches
    "2002:a00:1::",  # 6to4 of 10.0.0.1
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1 (RFC 6052)
]
SIGN_IN = {"auth_method": "client_secret_basic", "redirect_uris": ["https://rp.example.com/cb"]}
PUBLIC = ["93.184.215.14", "2606:4700:4700::1111", "::ffff:8.8.8.8"]


def address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(text)


@pytest.mark.parametrize("text", ALWAYS_REFUSED)
def test_link_local_metadata_unroutable_and_unusable_addresses_are_refused_whatever_is_allowed(text: str) -> None:
    for rule in (NO_INTERNAL, LOOPBACK, INTERNAL):
        assert rule.refusal(address(text)) is not None


@pytest.mark.parametrize("text", INTERNAL_ONLY)
def test_private_and_unique_local_addresses_are_refused_unless_the_operator_allowed_internal_ones(text: str) -> None:
    assert NO_INTERNAL.refusal(address(text)) is not None
    assert LOOPBACK.refusal(address(text)) is not None  # a development node allows loopback, not the network
    assert INTERNAL.refusal(address(text)) is None


@pytest.mark.parametrize("text", ["127.0.0.1", "127.8.9.1", "::1", "::ffff:127.0.0.1"])
def test_loopback_is_refused_unless_the_node_or_the_operator_allows_it(text: str) -> None:
    assert NO_INTERNAL.refusal(address(text)) == "a loopback address"
    assert LOOPBACK.refusal(address(text)) is None and INTERNAL.refusal(address(text)) is None


@pytest.mark.parametrize("text", PUBLIC)
def test_public_addresses_are_allowed(text: str) -> None:
    assert NO_INTERNAL.refusal(address(text)) is None


def test_at_registration_an_address_or_a_loopback_name_is_checked_and_any_other_name_waits_for_delivery() -> None:
    for host in ("169.254.169.254", "10.0.0.1", "localhost", "api.LOCALHOST.", "::1"):
        with pytest.raises(RefusedAddress, match="points to"):
            NO_INTERNAL.check_host(host, "the URI")
    NO_INTERNAL.check_host("rp.example.com", "the URI")  # resolved and checked when a token is posted
    LOOPBACK.check_host("localhost", "the URI")


def test_at_delivery_every_address_a_name_resolves_to_must_pass_and_the_first_is_the_one_connected_to() -> None:
    public, private = address("93.184.215.14"), address("10.0.0.1")
    assert NO_INTERNAL.check_resolved("rp.example.com", [public, address("2606:4700:4700::1111")]) == public
    with pytest.raises(RefusedAddress, match="rp.example.com resolves to a private address"):
        NO_INTERNAL.check_resolved("rp.example.com", [public, private])
    with pytest.raises(RefusedAddress, match="resolves to no address"):
        NO_INTERNAL.check_resolved("rp.example.com", [])


@pytest.fixture
def org_id(engine: Engine) -> str:
    return OrganizationStore(engine).create("Acme Foods").id


@pytest.mark.parametrize(
    "uri", ["https://169.254.169.254/latest", "https://10.0.0.1/logout", "http://localhost:6379/", "https://[fd00::1]/"]
)
def test_the_domains_registration_refuses_an_internal_backchannel_logout_uri(
    engine: Engine, org_id: str, uri: str
) -> None:
    with pytest.raises(RefusedAddress):
        ClientStore(engine).create(name="RP", org_id=org_id, backchannel_logout_uri=uri, **SIGN_IN)


def test_an_operator_may_allow_an_internal_uri_for_one_client_never_a_link_local_one(
    engine: Engine, org_id: str
) -> None:
    store = ClientStore(engine)
    client, _ = store.create(
        name="RP", org_id=org_id, backchannel_logout_uri="https://10.0.0.1/logout", allow_internal=True, **SIGN_IN
    )
    assert store.get(client.id).backchannel_logout_internal  # type: ignore[union-attr]
    kept = store.update(client.id, backchannel_logout_session_required=True)  # the URI kept keeps its allowance
    assert kept.backchannel_logout_internal and kept.backchannel_logout_uri == "https://10.0.0.1/logout"
    with pytest.raises(RefusedAddress):  # a new URI is checked anew
        store.update(client.id, backchannel_logout_uri="https://10.0.0.2/logout")
    with pytest.raises(RefusedAddress, match="link-local"):
        store.update(client.id, backchannel_logout_uri="https://169.254.169.254/", allow_internal=True)
    public = store.update(client.id, backchannel_logout_uri="https://rp.example.com/logout")
    assert not public.backchannel_logout_internal


@pytest.mark.parametrize(
    ("uri", "extra", "accepted"),
    [
        ("https://169.254.169.254/", (), False),
        ("https://10.0.0.1/", (), False),
        ("http://localhost:6379/", (), False),
        ("https://10.0.0.1/", ("--allow-internal",), True),
        ("http://localhost:6379/", ("--allow-internal",), True),
        ("https://169.254.169.254/", ("--allow-internal",), False),
        ("https://rp.example.com/logout", (), True),
    ],
)
def test_the_command_line_refuses_internal_targets_unless_allow_internal_is_given(
    database_url: str,
    engine: Engine,
    org_id: str,
    uri: str,
    extra: tuple[str, ...],
    accepted: bool,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MENUS_OUTBOUND_LOOPBACK", raising=False)  # a production node
    command = ["clients", "create", "--name", "RP", "--org", org_id, "--auth-method", "client_secret_basic",
               "--redirect-uri", "https://rp.example.com/cb", "--backchannel-logout-uri", uri, *extra,
               "--json", "--database-url", database_url]  # fmt: skip
    if accepted:
        run(command)
        created = json.loads(capsys.readouterr().out)
        assert created["backchannel_logout_uri"] == uri
        assert created["backchannel_logout_internal"] is bool(extra)
        return
    with pytest.raises(SystemExit) as refused:
        run(command)
    assert refused.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "outbound URIs must reach the public internet" in json.loads(error)["error"]


def test_the_command_line_allows_loopback_where_the_node_does(
    database_url: str, org_id: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MENUS_OUTBOUND_LOOPBACK", "on")  # a development node, as serve --demo's
    run(["clients", "create", "--name", "RP", "--org", org_id, "--auth-method", "client_secret_basic",
         "--redirect-uri", "https://rp.example.com/cb", "--backchannel-logout-uri", "http://127.0.0.1:9000/logout",
         "--json", "--database-url", database_url])  # fmt: skip
    assert json.loads(capsys.readouterr().out)["backchannel_logout_internal"] is False
