"""The issuer identifier and every URL derived from it.

The issuer may carry a path (``https://id.example.com/tenant-a``); every identity
endpoint then sits under that path, and cookies are scoped to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

AUTHORIZATION_PATH = "/oauth2/authorize"
TOKEN_PATH = "/oauth2/token"
USERINFO_PATH = "/oauth2/userinfo"
INTROSPECTION_PATH = "/oauth2/introspect"
REVOCATION_PATH = "/oauth2/revoke"
END_SESSION_PATH = "/oauth2/end-session"
JWKS_PATH = "/jwks"


@dataclass(frozen=True, slots=True)
class Issuer:
    url: str  # exactly as in every token's `iss`: scheme, host, optional path, no trailing slash

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise ValueError(f"the issuer must be an http(s) URL without query or fragment, got {self.url!r}")
        if self.url.endswith("/"):
            raise ValueError(f"the issuer must not end with '/', got {self.url!r}")

    @property
    def path(self) -> str:
        """The issuer's path ('' for the root): the identity API's base path."""
        return urlsplit(self.url).path

    @property
    def secure(self) -> bool:
        return self.url.startswith("https://")

    @property
    def cookie_path(self) -> str:
        return self.path or "/"

    def endpoint(self, path: str) -> str:
        return self.url + path

    def page(self, name: str) -> str:
        """A sign-in page's path, relative to the host (for redirects within the provider)."""
        return f"{self.path}/{name}"
