"""One typed settings object; every default lives here with a line saying what it is for."""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

# Where state lives when MENUS_DATABASE_URL is unset: SQLite in ./var/ of the working directory, made absolute
# when read (default_database_url()), so that every message names the file whichever folder it is read from.
DEFAULT_DATABASE_PATH = Path("var") / "regional-menus.sqlite3"
DEFAULT_HOST = "127.0.0.1"  # serve on loopback unless told otherwise
DEFAULT_PORT = 8000
DEFAULT_RATE_LIMIT = 600  # menus requests a minute per API key (in any 60-second moving window)
DEFAULT_RATE_LIMIT_STORAGE = "memory://"  # rate-limit windows per process; redis://host:port/db: one for every node
KEY_PUBLISH_DELAY = 120  # seconds a rotated-in signing key is published in the JWKS before it signs
ACCESS_TOKEN_TTL = 600  # seconds an access token (and an ID token) is valid
REFRESH_TOKEN_TTL = 30 * 24 * 3600  # seconds a refresh token family may live
SESSION_TTL = 14 * 24 * 3600  # seconds a browser session lasts before credentials are asked again
INTERACTION_TTL = 15 * 60  # seconds a pending sign-in (its pages and forms) stays usable
CONSOLE_PATH = "/console"  # where the developer console is served, below the base URL's host
USAGE_FLUSH_INTERVAL = 5  # seconds between writes of the per-key usage counted in memory (and at shutdown)
PURGE_INTERVAL = 3600  # seconds between purges of rows nothing can use any more (identity/purge.py); 0: never
CORS_ORIGINS = ("*",)  # origins whose pages may call the menus API, discovery, JWKS and userinfo (service/web/cors.py)


def default_database_url() -> str:
    """SQLite in ``./var/regional-menus.sqlite3`` of the current folder, as an absolute path."""
    return f"sqlite:///{DEFAULT_DATABASE_PATH.absolute()}"


# MENUS_SECRET_KEYS: Fernet keys sealing signing keys and service secrets at rest
# (service/database/secret_keys.py), comma-separated, the first seals and all open; unset: a key file made once
# beside the SQLite database (./var/secret-keys).


@dataclass(frozen=True, slots=True)
class Settings:
    database_url: str = field(default_factory=default_database_url)
    base_url: str = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"  # public address of the menus API
    issuer: str = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"  # OpenID Connect issuer identifier
    rate_limit_per_minute: int = DEFAULT_RATE_LIMIT
    rate_limit_storage: str = DEFAULT_RATE_LIMIT_STORAGE  # MENUS_RATE_LIMIT_STORAGE: memory:// or redis://…
    validate_responses: bool = False  # validate every response against the contract (on in tests)
    key_publish_delay: int = KEY_PUBLISH_DELAY
    access_token_ttl: int = ACCESS_TOKEN_TTL
    refresh_token_ttl: int = REFRESH_TOKEN_TTL
    session_ttl: int = SESSION_TTL
    interaction_ttl: int = INTERACTION_TTL
    purge_interval: int = PURGE_INTERVAL
    cors_origins: tuple[str, ...] = CORS_ORIGINS
    docs: bool = True  # serve the OpenAPI documents and Swagger UI (MENUS_DOCS=off: every one is 404)
    secret_keys: tuple[str, ...] = ()  # MENUS_SECRET_KEYS; () means the key file
    console_path: str = CONSOLE_PATH
    usage_flush_interval: int = USAGE_FLUSH_INTERVAL

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, port: int = DEFAULT_PORT) -> Settings:
        """Read ``MENUS_*`` variables; base URL and issuer default to ``http://127.0.0.1:<port>``."""
        env = os.environ if env is None else env
        local = f"http://{DEFAULT_HOST}:{port}"
        return cls(
            database_url=env.get("MENUS_DATABASE_URL") or default_database_url(),
            base_url=(env.get("MENUS_BASE_URL") or local).rstrip("/"),
            issuer=(env.get("MENUS_ISSUER") or local).rstrip("/"),
            rate_limit_per_minute=_whole(env, "MENUS_RATE_LIMIT", DEFAULT_RATE_LIMIT, minimum=1),
            rate_limit_storage=check_storage_url(env.get("MENUS_RATE_LIMIT_STORAGE", "")),
            key_publish_delay=_whole(env, "MENUS_KEY_PUBLISH_DELAY", KEY_PUBLISH_DELAY, minimum=0),
            access_token_ttl=_whole(env, "MENUS_ACCESS_TOKEN_TTL", ACCESS_TOKEN_TTL, minimum=1),
            refresh_token_ttl=_whole(env, "MENUS_REFRESH_TOKEN_TTL", REFRESH_TOKEN_TTL, minimum=1),
            session_ttl=_whole(env, "MENUS_SESSION_TTL", SESSION_TTL, minimum=60),
            purge_interval=_whole(env, "MENUS_PURGE_INTERVAL", PURGE_INTERVAL, minimum=0),
            cors_origins=_origins(env.get("MENUS_CORS_ORIGINS", ",".join(CORS_ORIGINS))),
            docs=_switch(env, "MENUS_DOCS", default=True),
            secret_keys=secret_keys_from(env),
            console_path=_path(env, "MENUS_CONSOLE_PATH", CONSOLE_PATH),
            usage_flush_interval=_whole(env, "MENUS_USAGE_FLUSH_INTERVAL", USAGE_FLUSH_INTERVAL, minimum=1),
        )

    def with_changes(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]


def check_storage_url(url: str) -> str:
    """``memory://`` (also for an empty value) or a Redis URL; anything else is a configuration error."""
    url = url.strip() or DEFAULT_RATE_LIMIT_STORAGE
    if url != DEFAULT_RATE_LIMIT_STORAGE and not url.startswith(("redis://", "rediss://", "redis+unix://")):
        raise ValueError("MENUS_RATE_LIMIT_STORAGE must be memory:// or a redis://, rediss:// or redis+unix:// URL")
    return url


def _whole(env: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    value = env.get(name, str(default))
    if not value.isascii() or not value.isdigit() or int(value) < minimum:
        raise ValueError(f"{name} must be a whole number of at least {minimum}, got {value!r}")
    return int(value)


def _origins(value: str) -> tuple[str, ...]:
    """``MENUS_CORS_ORIGINS``: ``*``, or origins separated by commas or spaces (``https://a.example``); empty: none."""
    origins = tuple(origin.rstrip("/") for origin in value.replace(",", " ").split())
    for origin in origins:
        scheme, _, rest = origin.partition("://")
        if origin != "*" and (scheme not in ("http", "https") or not rest or "/" in rest):
            raise ValueError(f"MENUS_CORS_ORIGINS: {origin!r} is not an origin (scheme://host[:port]) or *")
    return origins


def _switch(env: Mapping[str, str], name: str, default: bool) -> bool:
    value = env.get(name, "on" if default else "off").strip().lower()
    if value not in ("on", "off"):
        raise ValueError(f"{name} must be on or off, got {value!r}")
    return value == "on"


def secret_keys_from(env: Mapping[str, str]) -> tuple[str, ...]:
    """MENUS_SECRET_KEYS: comma-separated Fernet keys (32 bytes, URL-safe base64); the first seals."""
    keys = tuple(key.strip() for key in env.get("MENUS_SECRET_KEYS", "").split(",") if key.strip())
    for position, key in enumerate(keys, 1):
        try:
            valid = len(base64.urlsafe_b64decode(key.encode("ascii"))) == 32
        except (ValueError, UnicodeEncodeError):
            valid = False
        if not valid:  # never the key itself in the message
            raise ValueError(
                f"MENUS_SECRET_KEYS: key {position} is not 32 bytes of URL-safe base64 "
                "(make one with 'regional-menus secrets new-key')"
            )
    return keys


def _path(env: Mapping[str, str], name: str, default: str) -> str:
    """A path of its own below the host: ``/console``, ``/dev/console``; not the root, no trailing slash."""
    value = env.get(name) or default
    if not re.fullmatch(r"(/[A-Za-z0-9._~-]+)+", value) or value in ("/v1", "/healthz", "/readyz", "/metrics"):
        raise ValueError(f"{name} must be a path such as /console (not the root, no trailing slash), got {value!r}")
    return value
