"""OpenID Provider metadata (OpenID Connect Discovery 1.0 §3, RFC 8414), computed from the issuer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from identity.clients.client_auth import ASSERTION_ALGORITHMS
from identity.clients.registry import AUTH_METHODS, PUBLIC, SCOPES
from identity.common.issuer import (
    AUTHORIZATION_PATH,
    END_SESSION_PATH,
    INTROSPECTION_PATH,
    JWKS_PATH,
    REVOCATION_PATH,
    TOKEN_PATH,
    USERINFO_PATH,
    Issuer,
)
from identity.interaction.authorization_request import PROMPTS
from identity.keys.signing_keys import ALGORITHM
from identity.tokens.minting import ACR
from identity.tokens.pkce import METHOD

CLAIMS = (
    "sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "azp", "sid", "at_hash", "amr", "acr",
    "name", "email", "email_verified", "org_id", "org_name",
)  # fmt: skip


def metadata(issuer: Issuer, grant_types: Sequence[str], *, public_clients: bool = False) -> dict[str, Any]:
    """``public_clients`` (``MENUS_PUBLIC_CLIENTS``): the token and revocation endpoints list ``none`` too; the
    default lists exactly the specification's three methods."""
    auth_methods = list(AUTH_METHODS)
    public_methods = [*auth_methods, PUBLIC] if public_clients else auth_methods
    return {
        "issuer": issuer.url,
        "authorization_endpoint": issuer.endpoint(AUTHORIZATION_PATH),
        "token_endpoint": issuer.endpoint(TOKEN_PATH),
        "userinfo_endpoint": issuer.endpoint(USERINFO_PATH),
        "jwks_uri": issuer.endpoint(JWKS_PATH),
        "introspection_endpoint": issuer.endpoint(INTROSPECTION_PATH),
        "revocation_endpoint": issuer.endpoint(REVOCATION_PATH),
        "end_session_endpoint": issuer.endpoint(END_SESSION_PATH),
        "scopes_supported": list(SCOPES),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": list(grant_types),
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": [ALGORITHM],
        "token_endpoint_auth_methods_supported": public_methods,
        "token_endpoint_auth_signing_alg_values_supported": list(ASSERTION_ALGORITHMS),
        "introspection_endpoint_auth_methods_supported": auth_methods,
        "introspection_endpoint_auth_signing_alg_values_supported": list(ASSERTION_ALGORITHMS),
        "revocation_endpoint_auth_methods_supported": public_methods,
        "revocation_endpoint_auth_signing_alg_values_supported": list(ASSERTION_ALGORITHMS),
        "code_challenge_methods_supported": [METHOD],
        "prompt_values_supported": list(PROMPTS),
        "claims_supported": list(CLAIMS),
        "acr_values_supported": list(ACR.values()),  # a password, or the organization's own provider (federation)
        "claims_parameter_supported": False,
        "request_parameter_supported": False,
        "request_uri_parameter_supported": False,
        "authorization_response_iss_parameter_supported": True,
        # Back-Channel Logout 1.0 §2.1: logout tokens are posted, with sid (identity/sessions/backchannel_logout.py)
        "backchannel_logout_supported": True,
        "backchannel_logout_session_supported": True,
    }
