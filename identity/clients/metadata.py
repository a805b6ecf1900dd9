"""A client's registration metadata, each value checked before it is stored: redirect URIs (RFC 6749 §3.1.2,
RFC 8252), and how a presented one matches a registered one (§3.1.2.3); web origins (RFC 6454); the JWKS of a
``private_key_jwt`` client (RFC 7523)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from identity.common.errors import InvalidInput
from identity.common.vocabulary import PUBLIC

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
# RFC 8252 §7.3 and §8.3: a loopback IP literal, with or without a port (never the name localhost).
_LOOPBACK_NETLOC = re.compile(r"(127\.0\.0\.1|\[::1\])(?::[0-9]{1,5})?")
# RFC 6454 §4: an origin is a scheme, a host and a port; written as the ASCII serialization (§6.2), lower case.
_ORIGIN = re.compile(r"(https?)://([a-z0-9.-]+|\[[0-9a-f:.]+\])(?::([0-9]{1,5}))?")
MAX_WEB_ORIGINS = 20  # a public client may register at most this many web origins


def check_redirect_uri(uri: str) -> str:
    """RFC 6749 §3.1.2 and RFC 8252: absolute, no fragment; https, loopback http, or a private-use scheme."""
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018  # raises ValueError for a port that is not a number from 0 to 65535
    except ValueError:  # an unclosed IPv6 bracket, a netloc that NFKC normalization changes
        raise InvalidInput(f"redirect URI {uri!r} is not a URI") from None
    if not parts.scheme or parts.fragment or uri != uri.strip() or len(uri) > 2000:
        raise InvalidInput(f"redirect URI {uri!r} must be absolute and have no fragment")
    if parts.scheme == "https" and parts.hostname:
        return uri
    if parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
        return uri
    if parts.scheme not in ("http", "https") and "." in parts.scheme:
        return uri  # RFC 8252 §7.1 private-use URI scheme, e.g. com.example.app:/callback
    raise InvalidInput(f"redirect URI {uri!r} must use https (http only on a loopback address)")


def redirect_uri_matches(registered: str, presented: str) -> bool:
    """RFC 6749 §3.1.2.3: an exact match, except that RFC 8252 §7.3 lets a native app registered with a
    loopback IP literal (``http://127.0.0.1/callback``, ``http://[::1]/callback``) use any port on it.
    Scheme, address, path and query still match exactly; ``localhost`` is matched exactly (RFC 8252 §8.3)."""
    if presented == registered:
        return True
    return _without_loopback_port(registered) == _without_loopback_port(presented) is not None


def _without_loopback_port(uri: str) -> str | None:
    """The URI with its port dropped when it is an http URI on a loopback IP literal, else None (also for a
    string that is no URI: ``http://[::1:99/callback``, a netloc that NFKC normalization changes)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return None
    match = _LOOPBACK_NETLOC.fullmatch(parts.netloc)
    if parts.scheme != "http" or match is None or parts.fragment:
        return None
    port = parts.netloc[match.end(1) + 1 :]
    if port and not 0 < int(port) < 65536:
        return None
    return parts._replace(netloc=match.group(1)).geturl()


def check_web_origin(origin: str) -> str:
    """An origin (RFC 6454 §6.2: ``scheme://host[:port]``), not a URL: no path, query, fragment or user; https,
    or http on a loopback address (a page served over http elsewhere could be altered on its way)."""
    match = _ORIGIN.fullmatch(origin)
    if match is None or (match.group(3) is not None and not 0 < int(match.group(3)) < 65536):
        raise InvalidInput(f"web origin {origin!r} must be an origin, scheme://host[:port] in lower case, not a URL")
    scheme, host = match.group(1), match.group(2)
    if scheme == "http" and host.strip("[]") not in LOOPBACK_HOSTS:
        raise InvalidInput(f"web origin {origin!r} must use https (http only on a loopback address)")
    default_port = {"http": "80", "https": "443"}[scheme]
    return f"{scheme}://{host}" if match.group(3) == default_port else origin  # RFC 6454 §6.2: no default port


def check_web_origins(origins: Sequence[str], auth_method: str) -> tuple[str, ...]:
    """The registered web origins, each checked; only a public client has any."""
    checked = tuple(dict.fromkeys(check_web_origin(origin) for origin in origins))
    if checked and auth_method != PUBLIC:
        raise InvalidInput("web origins are only for public clients (--auth-method none): a page keeps no secret")
    if len(checked) > MAX_WEB_ORIGINS:
        raise InvalidInput(f"a client may register at most {MAX_WEB_ORIGINS} web origins")
    return checked


def check_jwks(jwks: Any) -> dict[str, Any]:
    if not isinstance(jwks, dict) or not isinstance(jwks.get("keys"), list) or not jwks["keys"]:
        raise InvalidInput("the JWKS must be a JSON object with a non-empty 'keys' list")
    for key in jwks["keys"]:
        if not isinstance(key, dict) or key.get("kty") not in ("RSA", "EC"):
            raise InvalidInput("every JWKS key must be an RSA or EC public key")
        if "d" in key:
            raise InvalidInput("the JWKS must hold public keys only; it contains a private key")
    return {"keys": jwks["keys"]}
