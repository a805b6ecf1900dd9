"""An organization's provider, as its discovery document describes it (OpenID Connect Discovery 1.0 §4).

Fetched once when an owner registers the connection (and again when they test it or save it), validated, and kept
with the connection: a sign-in never waits for discovery. Validated by Authlib's ``OpenIDProviderMetadata`` (each
field's rule of Discovery §3 and RFC 8414 §2) and by ours: the document's ``issuer`` is the one asked for, exactly
(Discovery §4.3); the provider signs ID tokens with an asymmetric algorithm we verify; it supports the code flow,
PKCE S256 (when it lists its methods) and a client authentication we speak; and every endpoint is an absolute
``https`` URI (``http`` only on a loopback address, where the node allows loopback) whose host the outbound rule
allows (identity/outbound_uris.py). Authlib's "MUST use https" is the one rule we relax, and only there.
"""

from __future__ import annotations

import ipaddress
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from authlib.oidc.discovery import OpenIDProviderMetadata

from identity.common.errors import InvalidInput
from identity.common.outbound_uris import OutboundRule
from identity.common.text import has_control
from identity.federation.errors import FederationError, UpstreamUnavailable
from identity.federation.id_tokens import ASYMMETRIC
from identity.federation.upstream_http import UpstreamHttp, json_object

MAX_URI = 2000  # characters of an issuer or endpoint URI at most
WELL_KNOWN = "/.well-known/openid-configuration"
AUTH_METHODS = ("client_secret_basic", "client_secret_post")  # ours, in the order we prefer them


@dataclass(frozen=True, slots=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str | None
    end_session_endpoint: str | None
    algorithms: tuple[str, ...]  # the ID token algorithms it announced that we verify
    auth_method: str  # client_secret_basic or client_secret_post
    iss_parameter: bool  # RFC 9207: it sends iss in its authorization answers
    backchannel_logout: bool  # Back-Channel Logout 1.0 §2.1: it posts logout tokens

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "algorithms": list(self.algorithms)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProviderMetadata:
        return cls(**{**data, "algorithms": tuple(data["algorithms"])})


def check_uri(uri: str, what: str, rule: OutboundRule) -> str:
    """An absolute https URI (http on loopback where the node allows it) without user, password or fragment, whose
    host the rule allows; ``InvalidInput`` naming ``what`` otherwise."""
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI or has_control(uri) or " " in uri:
        raise InvalidInput(f"the {what} must be a URI of at most {MAX_URI} characters")
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018  # ValueError for a port that is not a number from 0 to 65535
    except ValueError:
        raise InvalidInput(f"the {what} is not a URI") from None
    if not parts.hostname or parts.fragment or "#" in uri or parts.username is not None or parts.password is not None:
        raise InvalidInput(f"the {what} must be an absolute URI without a fragment, a user or a password")
    loopback = _loopback(parts.hostname)
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback and rule.loopback):
        raise InvalidInput(f"the {what} must use https")
    rule.check_host(parts.hostname, f"the {what}")
    return uri


def check_issuer(issuer: str, rule: OutboundRule) -> str:
    """Discovery §2: an https URI with no query or fragment."""
    issuer = check_uri(issuer.strip(), "issuer", rule)
    if urlsplit(issuer).query:
        raise InvalidInput("the issuer must not have a query")
    return issuer


def _loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def discover(http: UpstreamHttp, issuer: str, rule: OutboundRule) -> ProviderMetadata:
    """Fetch and validate the issuer's discovery document (``FederationError`` saying what is wrong)."""
    document = json_object(http.get(issuer.rstrip("/") + WELL_KNOWN), "discovery document")
    return validate(document, issuer, rule)


def validate(document: dict[str, Any], issuer: str, rule: OutboundRule) -> ProviderMetadata:
    if document.get("issuer") != issuer:  # Discovery §4.3: "MUST be identical"
        raise _bad("its issuer is not the one asked for", "issuer")
    metadata = OpenIDProviderMetadata(document)
    for key in metadata.REGISTRY_KEYS:
        try:
            getattr(metadata, f"validate_{key}")()
        except ValueError as error:
            if 'MUST use "https" scheme' in str(error) and rule.loopback:
                continue  # checked below, by our rule (http on loopback, in development)
            raise _bad(str(error), key) from None
    endpoints: dict[str, str | None] = {}
    for key in ("authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint", "end_session_endpoint"):
        value = document.get(key)
        if value is None and key in ("userinfo_endpoint", "end_session_endpoint"):
            endpoints[key] = None
            continue
        try:
            endpoints[key] = check_uri(str(value) if value is not None else "", key, rule)
        except InvalidInput as error:
            raise _bad(str(error), key) from None
    if "code" not in document["response_types_supported"]:
        raise _bad("it does not support the authorization code flow", "response_types_supported")
    methods = document.get("code_challenge_methods_supported")
    if methods is not None and "S256" not in methods:
        raise _bad("it does not support PKCE with S256", "code_challenge_methods_supported")
    algorithms = tuple(alg for alg in document["id_token_signing_alg_values_supported"] if alg in ASYMMETRIC)
    if not algorithms:
        raise _bad("it signs ID tokens with no algorithm we verify", "id_token_signing_alg_values_supported")
    supported = metadata.token_endpoint_auth_methods_supported
    auth_method = next((method for method in AUTH_METHODS if method in supported), None)
    if auth_method is None:
        raise _bad("it takes neither client_secret_basic nor client_secret_post", "token_endpoint_auth_methods")
    return ProviderMetadata(
        issuer=issuer,
        authorization_endpoint=endpoints["authorization_endpoint"] or "",
        token_endpoint=endpoints["token_endpoint"] or "",
        jwks_uri=endpoints["jwks_uri"] or "",
        userinfo_endpoint=endpoints["userinfo_endpoint"],
        end_session_endpoint=endpoints["end_session_endpoint"],
        algorithms=algorithms,
        auth_method=auth_method,
        iss_parameter=document.get("authorization_response_iss_parameter_supported") is True,
        backchannel_logout=document.get("backchannel_logout_supported") is True,
    )


def _bad(why: str, field: str) -> FederationError:
    return UpstreamUnavailable(
        f"The provider's discovery document cannot be used: {why[:200]}.", detail=f"discovery: {field}"
    )
