"""Client authentication at the token, introspection and revocation endpoints.

RFC 6749 §2.3: a client uses exactly one method per request: the one it was
registered with, ``client_secret_basic`` (§2.3.1: the id and secret are
form-encoded before Basic encoding, so they are decoded here),
``client_secret_post``, or ``private_key_jwt`` (RFC 7523 §3, OpenID Connect
Core §9); and HTTP Basic from any client issued a secret, ``client_secret_post``
ones included (§2.3.1: the server "MUST support the HTTP Basic authentication
scheme for authenticating clients that were issued a client password"; Authlib,
for one, revokes and introspects with Basic whatever the client's method). A public
client (``none``) sends only its ``client_id`` (RFC 6749 §3.2.1), and is known only
where public clients are on (``MENUS_PUBLIC_CLIENTS``); elsewhere it is
``invalid_client`` like an unknown one. Every failure is ``invalid_client`` with the
same description, so the answer never tells which check failed; its ``detail`` tells
the log.
"""

from __future__ import annotations

import base64
import hmac
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import unquote_plus

import jwt
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from identity.clients.registry import PUBLIC, Client, ClientStore, hash_secret
from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.digests import sha256_hex
from identity.common.errors import InvalidClient, InvalidRequest
from identity.common.issuer import TOKEN_PATH, Issuer
from identity.common.tables import client_assertions
from identity.common.text import has_control

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ASSERTION_ALGORITHMS = ("RS256", "PS256", "ES256")
# RFC 7518 §3.1: the key type (and curve) each assertion algorithm verifies with.
KEY_TYPE_OF = {"RS256": ("RSA", None), "PS256": ("RSA", None), "ES256": ("EC", "P-256")}
# An assertion may not claim to live longer than this: an hour (Authlib's default lifetime, and
# Okta's limit), plus a minute for clock skew. Its jti is remembered until it expires.
MAX_ASSERTION_LIFETIME = timedelta(hours=1, minutes=1)
_DUMMY_HASH = hash_secret("no client has this secret")
# RFC 6749 §2.3.1: HTTP Basic is taken from every client that was issued a secret.
SECRET_METHODS = ("client_secret_basic", "client_secret_post")


def decode_basic(header: str) -> tuple[str, str]:
    """RFC 7617 and RFC 6749 §2.3.1: ``Basic base64(urlencode(id) ":" urlencode(secret))``."""
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
    except ValueError:  # binascii.Error, UnicodeDecodeError, or a str with non-ASCII characters (Basic é)
        raise InvalidClient(detail="The Basic credentials are not base64 of UTF-8 text.") from None
    client_id, colon, secret = decoded.partition(":")
    if not colon:
        raise InvalidClient(detail="The Basic credentials have no ':' between id and secret.")
    client_id, secret = unquote_plus(client_id), unquote_plus(secret)
    if has_control(client_id):  # names no client, and a NUL byte must never reach the database
        raise InvalidClient(detail="The Basic credentials' id holds a control character.")
    return client_id, secret


class ClientAuthenticator:
    def __init__(
        self,
        engine: Engine,
        clients: ClientStore,
        issuer: Issuer,
        clock: Clock = SYSTEM_CLOCK,
        *,
        public_clients: bool = False,  # MENUS_PUBLIC_CLIENTS: whether clients of the method none are known here
    ) -> None:
        self._engine = engine
        self._clients = clients
        self._issuer = issuer
        self._clock = clock
        self.public_clients = public_clients

    def authenticate(self, params: Mapping[str, str], authorization: str | None, *, public: bool = True) -> Client:
        """The client of the request; ``public=False`` where a public client has no business (introspection)."""
        basic = authorization is not None and authorization[:6].lower() == "basic "
        post = "client_secret" in params
        assertion = "client_assertion" in params or "client_assertion_type" in params
        if basic + post + assertion > 1:
            raise InvalidRequest("Use exactly one client authentication method.")
        if basic:
            assert authorization is not None
            client_id, secret = decode_basic(authorization)
            if params.get("client_id", client_id) != client_id:
                raise InvalidClient(detail="The body's client_id is not the Basic credentials' id.")
            return self._by_secret(client_id, secret, SECRET_METHODS)
        if post:
            return self._by_secret(params.get("client_id", ""), params["client_secret"], ("client_secret_post",))
        if assertion:
            return self._by_assertion(params)
        return self._public(params.get("client_id", ""), allowed=public)

    def _public(self, client_id: str, *, allowed: bool) -> Client:
        """RFC 6749 §2.3 and §3.2.1: a public client identifies itself with its ``client_id`` alone."""
        if not client_id:
            raise InvalidClient(detail="The request carries no client credentials.")
        client = self._clients.get(client_id) if len(client_id) <= 64 else None
        if client is None or client.auth_method != PUBLIC:
            raise InvalidClient(detail=_not_by(client, (PUBLIC,), client_id, "credentials"))
        if not self.public_clients:
            raise InvalidClient(detail=f"Client {client.id} is public, and public clients are off on this node.")
        if not allowed:
            raise InvalidClient(detail=f"Client {client.id} is public, and may not use this endpoint.")
        return client

    def _by_secret(self, client_id: str, secret: str, methods: tuple[str, ...]) -> Client:
        """A client registered for one of ``methods``, by its secret. The secret is checked against the stored hash
        at every request, in constant time; the client's row may come from the store's short memory
        (``ClientStore.recent``)."""
        client = self._clients.recent(client_id) if client_id and len(client_id) <= 64 else None
        if client is None or client.auth_method not in methods or client.secret_hash is None:
            hmac.compare_digest(hash_secret(secret), _DUMMY_HASH)  # the same work as for a known client
            raise InvalidClient(detail=_not_by(client, methods, client_id, "secret"))
        if not client.verify_secret(secret, self._clock.now()):
            raise InvalidClient(detail=f"The secret of client {client.id} is wrong.")
        return client

    def _by_assertion(self, params: Mapping[str, str]) -> Client:
        """RFC 7523 §3: iss = sub = client_id, aud the issuer or the token endpoint, exp, single-use jti."""
        token = params.get("client_assertion", "")
        if params.get("client_assertion_type") != ASSERTION_TYPE or not token:
            raise InvalidClient(detail="The client_assertion_type is not jwt-bearer, or the assertion is missing.")
        try:
            unverified = jwt.decode(token, options={"verify_signature": False})
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            raise InvalidClient(detail="The client assertion is not a JWT.") from None
        client_id = unverified.get("iss")
        if not isinstance(client_id, str) or has_control(client_id) or params.get("client_id", client_id) != client_id:
            raise InvalidClient(detail="The client assertion's iss is not a string, or not the body's client_id.")
        client = self._clients.get(client_id) if len(client_id) <= 64 else None
        if client is None or client.auth_method != "private_key_jwt" or not client.jwks:
            raise InvalidClient(detail=_not_by(client, ("private_key_jwt",), client_id, "keys"))
        claims = self._verified(token, header, client)
        if claims.get("sub") != client_id or not isinstance(claims.get("jti"), str):
            raise InvalidClient(detail=f"The assertion of client {client_id} has another sub, or no string jti.")
        if not isinstance(claims["exp"], int | float) or isinstance(claims["exp"], bool):
            # RFC 7519 §4.1.4: exp is a NumericDate (a JSON number); PyJWT also accepts "1700000000"
            raise InvalidClient(detail=f"The assertion of client {client_id} has an exp that is not a number.")
        if claims["exp"] - self._clock.now().timestamp() > MAX_ASSERTION_LIFETIME.total_seconds():
            raise InvalidClient(detail=f"The assertion of client {client_id} lives longer than an hour.")
        expires = datetime.fromtimestamp(claims["exp"], UTC)
        self._spend(client_id, claims["jti"], expires)
        return client

    def _verified(self, token: str, header: Mapping[str, Any], client: Client) -> dict[str, Any]:
        algorithm = header.get("alg")
        if algorithm not in ASSERTION_ALGORITHMS:
            raise InvalidClient(detail=f"The assertion of client {client.id} is not signed with RS256, PS256 or ES256.")
        audiences = [self._issuer.url, self._issuer.endpoint(TOKEN_PATH)]
        assert client.jwks is not None
        kty, curve = KEY_TYPE_OF[algorithm]
        for jwk in client.jwks["keys"]:
            if header.get("kid") and jwk.get("kid") != header.get("kid"):
                continue
            if jwk.get("kty") != kty or (curve is not None and jwk.get("crv") != curve):
                continue  # without a kid, only the keys this algorithm can verify with are tried
            try:
                key = jwt.PyJWK(jwk, algorithm=algorithm)
                claims: dict[str, Any] = jwt.decode(
                    token,
                    key=key,
                    algorithms=[algorithm],
                    audience=audiences,
                    issuer=client.id,
                    options={"require": ["iss", "sub", "aud", "exp", "jti"]},
                )
                if not isinstance(claims["aud"], str):
                    # draft-ietf-oauth-rfc7523bis: one audience, as a string
                    raise InvalidClient(detail=f"The assertion of client {client.id} has an aud that is a list.")
                return claims
            except (jwt.PyJWTError, ValueError, TypeError):
                continue  # InvalidKeyError, InvalidSignatureError, PyJWKError…: this key does not verify it
        raise InvalidClient(detail=f"No registered key of client {client.id} verifies its assertion with its claims.")

    def _spend(self, client_id: str, jti: str, expires: datetime) -> None:
        """Record the jti until the assertion expires; a second use is refused."""
        jti_hash = sha256_hex(f"{client_id}\x00{jti}")
        try:
            with self._engine.begin() as connection:
                connection.execute(
                    client_assertions.delete().where(client_assertions.c.expires_at <= self._clock.now())
                )
                connection.execute(client_assertions.insert().values(jti_hash=jti_hash, expires_at=expires))
        except IntegrityError:
            raise InvalidClient(detail=f"Client {client_id} used an assertion's jti a second time.") from None


def _not_by(client: Client | None, methods: tuple[str, ...], client_id: str, credential: str) -> str:
    """Why a client cannot authenticate as one of ``methods``, for the log (the id is cut to the longest any has)."""
    if client is None:
        return f"No client has the id {client_id[:64]!r}."
    if client.auth_method not in methods:
        return f"Client {client.id} is registered for {client.auth_method}, not {' or '.join(methods)}."
    return f"Client {client.id} has no registered {credential}."
