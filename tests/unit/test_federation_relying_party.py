"""The relying party we are to an organization's provider: discovery, the authorization request and its answer, the
code's redemption, the ID token's verification and the provider's keys (identity/federation/)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from joserfc.jwk import RSAKey

from identity.common.outbound_uris import OutboundRule
from identity.federation.authorization import code_of, start
from identity.federation.errors import FederationError, UpstreamRefused, UpstreamUnavailable
from identity.federation.key_sets import KeySets
from identity.federation.provider_metadata import ProviderMetadata, check_issuer, discover
from identity.federation.token_exchange import TokenExchange, UpstreamClient
from identity.federation.upstream_http import Answer
from tests.support.clocks import MovableClock
from tests.support.upstream_fake import CLIENT_ID, CLIENT_SECRET, FakeUpstream

PUBLIC = OutboundRule()
REDIRECT_URI = "https://id.menus.example/federation/org_1/callback"
ISSUER_OF_FAKE = FakeUpstream.issuer
ANA = {"sub": "up-ana", "email": "ana@corp.example", "email_verified": True, "name": "Ana"}


def metadata(upstream: FakeUpstream) -> ProviderMetadata:
    return discover(upstream, upstream.issuer, PUBLIC)


def client_of(upstream: FakeUpstream) -> UpstreamClient:
    found = metadata(upstream)
    return UpstreamClient(
        connection_id="fed_1",
        issuer=found.issuer,
        token_endpoint=found.token_endpoint,
        jwks_uri=found.jwks_uri,
        userinfo_endpoint=found.userinfo_endpoint,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        algorithms=found.algorithms,
        basic_auth=found.auth_method == "client_secret_basic",
    )


def exchange(upstream: FakeUpstream, clock: MovableClock | None = None) -> TokenExchange:
    clock = clock or MovableClock()
    keys = KeySets(upstream, clock.monotonic, max_age=3600, min_refresh=60)
    return TokenExchange(upstream, keys, lambda: int(clock.now().timestamp()), leeway=30)


def signed_in(upstream: FakeUpstream, claims: dict[str, Any], clock: MovableClock | None = None) -> Any:
    begun = start(f"{upstream.issuer}/auth", client_id=CLIENT_ID, redirect_uri=REDIRECT_URI, scopes=["openid"])
    answer = upstream.authorize(begun.url, claims)
    code = code_of(answer, issuer=upstream.issuer, iss_required=True)
    return exchange(upstream, clock).redeem(
        client_of(upstream), code=code, redirect_uri=REDIRECT_URI, code_verifier=begun.code_verifier, nonce=begun.nonce
    )


# Discovery


def test_discovery_reads_the_endpoints_and_what_the_provider_supports() -> None:
    found = metadata(FakeUpstream())
    assert found.token_endpoint == "https://id.corp.example/token"
    assert found.algorithms == ("RS256",)
    assert found.auth_method == "client_secret_basic"
    assert found.iss_parameter and found.backchannel_logout
    assert ProviderMetadata.from_dict(found.as_dict()) == found


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({"issuer": "https://evil.example"}, "its issuer is not the one asked for"),
        ({"code_challenge_methods_supported": ["plain"]}, "PKCE with S256"),
        ({"response_types_supported": ["id_token"]}, "authorization code flow"),
        ({"id_token_signing_alg_values_supported": ["HS256"]}, "RS256"),
        ({"token_endpoint_auth_methods_supported": ["tls_client_auth"]}, "neither client_secret_basic"),
        ({"token_endpoint": "http://id.corp.example/token"}, "https"),
        ({"jwks_uri": "https://169.254.169.254/jwks"}, "link-local"),
        ({"jwks_uri": None}, "jwks_uri"),
    ],
)
def test_a_discovery_document_that_cannot_be_used_is_refused_saying_why(extra: dict[str, Any], why: str) -> None:
    upstream = FakeUpstream(discovery_extra=extra)
    with pytest.raises(UpstreamUnavailable, match="discovery document cannot be used") as refused:
        metadata(upstream)
    assert why in refused.value.description


def test_discovery_is_not_followed_through_a_redirect() -> None:
    upstream = FakeUpstream()
    upstream.overrides[f"{upstream.issuer}/.well-known/openid-configuration"] = Answer(302, "text/html", b"")
    with pytest.raises(UpstreamUnavailable, match="redirect"):
        metadata(upstream)


def test_an_http_issuer_is_taken_only_on_loopback_where_the_node_allows_loopback() -> None:
    assert check_issuer("http://127.0.0.1:9000", OutboundRule(loopback=True)) == "http://127.0.0.1:9000"
    for issuer, rule in [
        ("http://127.0.0.1:9000", PUBLIC),
        ("http://id.corp.example", OutboundRule(loopback=True)),
        ("https://10.0.0.5", OutboundRule(loopback=True)),
        ("https://id.corp.example/?tenant=1", PUBLIC),
        ("https://user:pw@id.corp.example", PUBLIC),
    ]:
        with pytest.raises(ValueError):
            check_issuer(issuer, rule)


# The authorization request and its answer


def test_the_authorization_request_carries_pkce_s256_state_and_nonce() -> None:
    begun = start("https://id.corp.example/auth", client_id="c", redirect_uri=REDIRECT_URI, scopes=["openid", "email"])
    query = {name: values[0] for name, values in parse_qs(urlsplit(begun.url).query).items()}
    assert query["code_challenge_method"] == "S256" and query["code_challenge"] != begun.code_verifier
    assert query["state"] == begun.state and query["nonce"] == begun.nonce
    assert query["scope"] == "openid email" and query["redirect_uri"] == REDIRECT_URI
    assert len(begun.state) >= 43 and len(begun.code_verifier) >= 43


def test_an_answer_from_another_issuer_is_refused() -> None:
    with pytest.raises(UpstreamUnavailable, match="another provider"):
        code_of({"code": "c", "iss": "https://evil.example"}, issuer=ISSUER_OF_FAKE, iss_required=False)


def test_an_answer_without_iss_is_refused_where_the_provider_announced_it() -> None:
    with pytest.raises(UpstreamUnavailable, match="RFC 9207"):
        code_of({"code": "c"}, issuer=ISSUER_OF_FAKE, iss_required=True)
    assert code_of({"code": "c"}, issuer=ISSUER_OF_FAKE, iss_required=False) == "c"


def test_an_error_from_the_provider_says_what_happened() -> None:
    with pytest.raises(UpstreamRefused) as refused:
        code_of(
            {"error": "access_denied", "error_description": "User said no"}, issuer=ISSUER_OF_FAKE, iss_required=False
        )
    assert refused.value.description == (
        "The sign-in was cancelled or refused at your organization's provider. It said: access_denied (User said no)."
    )
    assert refused.value.status == 400


# The code redeemed, the ID token verified


def test_a_verified_sign_in_gives_the_providers_iss_sub_and_address() -> None:
    who = signed_in(FakeUpstream(), ANA)
    assert (who.issuer, who.subject, who.email, who.email_verified) == (ISSUER_OF_FAKE, "up-ana", ANA["email"], True)
    assert who.session_id == "up-session"


def test_the_address_is_read_from_userinfo_when_the_id_token_lacks_it() -> None:
    upstream = FakeUpstream(userinfo_claims=True)
    who = signed_in(upstream, ANA)
    assert who.email == ANA["email"] and who.email_verified
    assert ("GET", f"{upstream.issuer}/me") in upstream.requests


def test_an_unverified_or_missing_email_verified_is_not_verified() -> None:
    assert not signed_in(FakeUpstream(), {**ANA, "email_verified": False}).email_verified
    assert not signed_in(FakeUpstream(), {**ANA, "email_verified": "true"}).email_verified


def test_a_code_the_provider_refuses_says_so() -> None:
    upstream = FakeUpstream()
    begun = start(f"{upstream.issuer}/auth", client_id=CLIENT_ID, redirect_uri=REDIRECT_URI, scopes=["openid"])
    code = code_of(upstream.authorize(begun.url, ANA), issuer=upstream.issuer, iss_required=True)
    with pytest.raises(UpstreamRefused, match="invalid_grant"):
        exchange(upstream).redeem(
            client_of(upstream), code=code, redirect_uri=REDIRECT_URI, code_verifier="wrong" * 10, nonce=begun.nonce
        )


def test_an_id_token_for_another_nonce_is_refused() -> None:
    upstream = FakeUpstream()
    begun = start(f"{upstream.issuer}/auth", client_id=CLIENT_ID, redirect_uri=REDIRECT_URI, scopes=["openid"])
    code = code_of(upstream.authorize(begun.url, ANA), issuer=upstream.issuer, iss_required=True)
    with pytest.raises(UpstreamUnavailable, match="not issued for this sign-in"):
        exchange(upstream).redeem(
            client_of(upstream), code=code, redirect_uri=REDIRECT_URI, code_verifier=begun.code_verifier, nonce="x"
        )


def test_an_expired_id_token_is_refused() -> None:
    clock = MovableClock()
    upstream = FakeUpstream(now=lambda: int(clock.now().timestamp()) - 3600)
    with pytest.raises(UpstreamUnavailable, match="expired"):
        signed_in(upstream, ANA, clock)


def test_a_rotated_key_is_fetched_once_and_an_unknown_one_refused() -> None:
    clock = MovableClock()
    upstream = FakeUpstream()
    keys = KeySets(upstream, clock.monotonic, max_age=3600, min_refresh=60)
    tokens = TokenExchange(upstream, keys, lambda: int(clock.now().timestamp()), leeway=30)
    client = client_of(upstream)

    def sign_in() -> Any:
        begun = start(f"{upstream.issuer}/auth", client_id=CLIENT_ID, redirect_uri=REDIRECT_URI, scopes=["openid"])
        code = code_of(upstream.authorize(begun.url, ANA), issuer=upstream.issuer, iss_required=True)
        return tokens.redeem(
            client, code=code, redirect_uri=REDIRECT_URI, code_verifier=begun.code_verifier, nonce=begun.nonce
        )

    sign_in()
    clock.advance(120)
    upstream.key = RSAKey.generate_key(2048, parameters={"kid": "up-2", "alg": "RS256"})
    assert sign_in().subject == "up-ana"  # the set fetched again for the new kid
    fetches = upstream.requests.count(("GET", f"{upstream.issuer}/jwks"))
    assert fetches == 2
    upstream.key = RSAKey.generate_key(2048, parameters={"kid": "up-3", "alg": "RS256"})
    with pytest.raises(FederationError, match="key it does not publish"):
        sign_in()  # a minute has not passed: the set is not fetched again
    assert upstream.requests.count(("GET", f"{upstream.issuer}/jwks")) == fetches
