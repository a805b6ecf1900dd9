"""An organization's OpenID provider in process, for the unit and API tests of federation: it answers the requests
of the ``UpstreamHttp`` port (identity/federation/upstream_http.py) from memory, signs its ID and logout tokens with
its key, and records what it was asked. The system test runs panva's oidc-provider instead
(tests/support/upstream.py)."""

from __future__ import annotations

import base64
import functools
import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
from joserfc import jwt
from joserfc.jwk import RSAKey

from identity.federation.upstream_http import Answer

ISSUER = "https://id.corp.example"
CLIENT_ID = "our-client"
CLIENT_SECRET = "our-secret-at-the-provider"


@functools.cache
def made_once() -> RSAKey:
    """The provider's key, made once a process (a new RSA key is 0.1 s of CPU, and a federation test starts a provider
    each): each test's app reads it afresh from the provider's JWKS all the same. A test of a key the app never saw
    gives the provider another (``upstream.key = …``)."""
    return RSAKey.generate_key(2048, parameters={"kid": "up-1", "alg": "RS256"})


@dataclass
class Issued:
    """What the provider remembers of one authorization code."""

    claims: dict[str, Any]
    nonce: str
    code_challenge: str
    redirect_uri: str


@dataclass
class FakeUpstream:
    issuer: str = ISSUER
    key: RSAKey = field(default_factory=made_once)
    iss_parameter: bool = True
    userinfo_claims: bool = False  # email claims only at UserInfo, as node-oidc-provider does by default
    now: Callable[[], int] = field(default=lambda: int(time.time()))
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, url)
    codes: dict[str, Issued] = field(default_factory=dict)
    access_tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    discovery_extra: dict[str, Any] = field(default_factory=dict)
    overrides: dict[str, Answer] = field(default_factory=dict)  # url -> a fixed answer (errors, redirects)

    # Its documents

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/auth",
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": f"{self.issuer}/jwks",
            "userinfo_endpoint": f"{self.issuer}/me",
            "end_session_endpoint": f"{self.issuer}/session/end",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "authorization_response_iss_parameter_supported": self.iss_parameter,
            "backchannel_logout_supported": True,
            **self.discovery_extra,
        }

    def jwks(self) -> dict[str, Any]:
        return {"keys": [self.key.as_dict(private=False)]}

    # The browser's side: the provider signs someone in and answers the authorization request

    def authorize(self, url: str, claims: Mapping[str, Any]) -> dict[str, str]:
        """Sign in whoever ``claims`` describe: the query the provider redirects back with (code, state, iss)."""
        query = {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}
        code = "code-" + base64.urlsafe_b64encode(hashlib.sha256(url.encode()).digest()[:12]).decode()
        self.codes[code] = Issued(dict(claims), query["nonce"], query["code_challenge"], query["redirect_uri"])
        answer = {"code": code, "state": query["state"]}
        if self.iss_parameter:
            answer["iss"] = self.issuer
        return answer

    def id_token(self, claims: Mapping[str, Any], **extra: Any) -> str:
        at = self.now()
        body = {"iss": self.issuer, "aud": CLIENT_ID, "iat": at, "exp": at + 300, **claims, **extra}
        return jwt.encode({"alg": "RS256", "kid": self.key.kid}, body, self.key)

    def logout_token(self, **claims: Any) -> str:
        at = self.now()
        body = {
            "iss": self.issuer,
            "aud": CLIENT_ID,
            "iat": at,
            "exp": at + 120,
            "jti": f"jti-{at}-{len(self.requests)}",
            "events": {"http://schemas.openid.net/event/backchannel-logout": {}},
            **claims,
        }
        return jwt.encode({"alg": "RS256", "kid": self.key.kid, "typ": "logout+jwt"}, body, self.key)

    # The port

    def get(self, url: str, *, bearer: str | None = None) -> Answer:
        self.requests.append(("GET", url))
        if url in self.overrides:
            return self.overrides[url]
        if url == f"{self.issuer}/.well-known/openid-configuration":
            return _json(self.discovery())
        if url == f"{self.issuer}/jwks":
            return _json(self.jwks())
        if url == f"{self.issuer}/me":
            claims = self.access_tokens.get(bearer or "")
            return _json(claims) if claims is not None else _json({"error": "invalid_token"}, 401)
        return _json({"error": "not_found"}, 404)

    def post_form(self, url: str, form: Mapping[str, str], *, basic: tuple[str, str] | None = None) -> Answer:
        self.requests.append(("POST", url))
        if url in self.overrides:
            return self.overrides[url]
        if url != f"{self.issuer}/token":
            return _json({"error": "not_found"}, 404)
        client = basic or (form.get("client_id"), form.get("client_secret"))
        if client != (CLIENT_ID, CLIENT_SECRET):
            return _json({"error": "invalid_client"}, 401)
        issued = self.codes.pop(form.get("code", ""), None)
        verifier = form.get("code_verifier", "")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if issued is None or issued.code_challenge != challenge or issued.redirect_uri != form.get("redirect_uri"):
            return _json({"error": "invalid_grant"}, 400)
        access_token = f"at-{len(self.access_tokens)}"
        self.access_tokens[access_token] = issued.claims
        in_token = {"sub": issued.claims["sub"], "sid": issued.claims.get("sid", "up-session")}
        if not self.userinfo_claims:
            in_token = {**issued.claims, **in_token}
        return _json(
            {
                "access_token": access_token,
                "token_type": "Bearer",
                "id_token": self.id_token(in_token, nonce=issued.nonce),
            }
        )


def _json(document: Any, status: int = 200) -> Answer:
    return Answer(status, "application/json", orjson.dumps(document))
