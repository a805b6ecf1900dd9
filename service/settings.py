"""One typed settings object; every default lives here with a line saying what it is for."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

# Where state lives when MENUS_DATABASE_URL is unset: SQLite in ./var/ of the working directory.
DEFAULT_DATABASE_URL = f"sqlite:///{Path('var') / 'regional-menus.sqlite3'}"
DEFAULT_HOST = "127.0.0.1"  # serve on loopback unless told otherwise
DEFAULT_PORT = 8000
DEFAULT_RATE_LIMIT = 600  # menus requests a minute per API key (token bucket capacity and refill)
KEY_PUBLISH_DELAY = 120  # seconds a rotated-in signing key is published in the JWKS before it signs
ACCESS_TOKEN_TTL = 600  # seconds an access token (and an ID token) is valid
REFRESH_TOKEN_TTL = 30 * 24 * 3600  # seconds a refresh token family may live
SESSION_TTL = 14 * 24 * 3600  # seconds a browser session lasts before credentials are asked again
INTERACTION_TTL = 15 * 60  # seconds a pending sign-in (its pages and forms) stays usable
CONSOLE_PATH = "/console"  # where the developer console is served, below the base URL's host
USAGE_FLUSH_INTERVAL = 5  # seconds between writes of the per-key usage counted in memory (and at shutdown)
PURGE_INTERVAL = 3600  # seconds between purges of rows nothing can use any more (identity/purge.py); 0: never


@dataclass(frozen=True, slots=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    base_url: str = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"  # public address of the menus API
    issuer: str = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"  # OpenID Connect issuer identifier
    rate_limit_per_minute: int = DEFAULT_RATE_LIMIT
    validate_responses: bool = False  # validate every response against the contract (on in tests)
    key_publish_delay: int = KEY_PUBLISH_DELAY
    access_token_ttl: int = ACCESS_TOKEN_TTL
    refresh_token_ttl: int = REFRESH_TOKEN_TTL
    session_ttl: int = SESSION_TTL
    interaction_ttl: int = INTERACTION_TTL
    purge_interval: int = PURGE_INTERVAL
    console_path: str = CONSOLE_PATH
    usage_flush_interval: int = USAGE_FLUSH_INTERVAL

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, port: int = DEFAULT_PORT) -> Settings:
        """Read ``MENUS_*`` variables; base URL and issuer default to ``http://127.0.0.1:<port>``."""
        env = os.environ if env is None else env
        local = f"http://{DEFAULT_HOST}:{port}"
        return cls(
            database_url=env.get("MENUS_DATABASE_URL") or DEFAULT_DATABASE_URL,
            base_url=(env.get("MENUS_BASE_URL") or local).rstrip("/"),
            issuer=(env.get("MENUS_ISSUER") or local).rstrip("/"),
            rate_limit_per_minute=_whole(env, "MENUS_RATE_LIMIT", DEFAULT_RATE_LIMIT, minimum=1),
            key_publish_delay=_whole(env, "MENUS_KEY_PUBLISH_DELAY", KEY_PUBLISH_DELAY, minimum=0),
            access_token_ttl=_whole(env, "MENUS_ACCESS_TOKEN_TTL", ACCESS_TOKEN_TTL, minimum=1),
            refresh_token_ttl=_whole(env, "MENUS_REFRESH_TOKEN_TTL", REFRESH_TOKEN_TTL, minimum=1),
            session_ttl=_whole(env, "MENUS_SESSION_TTL", SESSION_TTL, minimum=60),
            purge_interval=_whole(env, "MENUS_PURGE_INTERVAL", PURGE_INTERVAL, minimum=0),
            console_path=_path(env, "MENUS_CONSOLE_PATH", CONSOLE_PATH),
            usage_flush_interval=_whole(env, "MENUS_USAGE_FLUSH_INTERVAL", USAGE_FLUSH_INTERVAL, minimum=1),
        )

    def with_changes(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]


def _whole(env: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    value = env.get(name, str(default))
    if not value.isascii() or not value.isdigit() or int(value) < minimum:
        raise ValueError(f"{name} must be a whole number of at least {minimum}, got {value!r}")
    return int(value)


def _path(env: Mapping[str, str], name: str, default: str) -> str:
    """A path of its own below the host: ``/console``, ``/dev/console``; not the root, no trailing slash."""
    value = env.get(name) or default
    if not re.fullmatch(r"(/[A-Za-z0-9._~-]+)+", value) or value in ("/v1", "/healthz", "/readyz", "/metrics"):
        raise ValueError(f"{name} must be a path such as /console (not the root, no trailing slash), got {value!r}")
    return value
