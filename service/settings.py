"""One typed settings object; every default lives here with a line saying what it is for."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

# Where state lives when MENUS_DATABASE_URL is unset: SQLite in ./var/ of the working directory.
DEFAULT_DATABASE_URL = f"sqlite:///{Path('var') / 'regional-menus.sqlite3'}"
DEFAULT_HOST = "127.0.0.1"  # serve on loopback unless told otherwise
DEFAULT_PORT = 8000
DEFAULT_RATE_LIMIT = 600  # menus requests a minute per API key (token bucket capacity and refill)


@dataclass(frozen=True, slots=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    base_url: str = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"  # public address of the menus API
    issuer: str = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"  # OpenID Connect issuer identifier
    rate_limit_per_minute: int = DEFAULT_RATE_LIMIT
    validate_responses: bool = False  # validate every response against the contract (on in tests)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, port: int = DEFAULT_PORT) -> Settings:
        """Read ``MENUS_*`` variables; base URL and issuer default to ``http://127.0.0.1:<port>``."""
        env = os.environ if env is None else env
        local = f"http://{DEFAULT_HOST}:{port}"
        rate = env.get("MENUS_RATE_LIMIT", str(DEFAULT_RATE_LIMIT))
        if not rate.isdigit() or int(rate) < 1:
            raise ValueError(f"MENUS_RATE_LIMIT must be a positive whole number, got {rate!r}")
        return cls(
            database_url=env.get("MENUS_DATABASE_URL") or DEFAULT_DATABASE_URL,
            base_url=(env.get("MENUS_BASE_URL") or local).rstrip("/"),
            issuer=(env.get("MENUS_ISSUER") or local).rstrip("/"),
            rate_limit_per_minute=int(rate),
        )

    def with_changes(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]
