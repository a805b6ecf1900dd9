"""The typed settings object: the table (``table.py``), read from the ``MENUS_*`` variables, and the policies it
hands to the domain (lifetimes, limits, cache ages, the mail's retries, the connection pool)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from service.settings.grammars import ConfigurationError, Grammar
from service.settings.rows import Entry, rows
from service.settings.table import DEFAULT_HOST, DEFAULT_PORT, SettingsTable

if TYPE_CHECKING:  # imported where used: reading settings (the command line's --help too) loads no domain
    from identity.mail.outbox import DeliveryPolicy
    from identity.provider import Lifetimes, Tuning


@dataclass(frozen=True, slots=True)
class Pool:
    """A process's connections to the state database (``Settings.database_pool``; ``service.database.db`` uses it)."""

    size: int  # connections kept open
    max_overflow: int  # more opened at busy times
    connect_timeout: int  # seconds to wait for PostgreSQL to accept a connection

    @property
    def capacity(self) -> int:
        """The most connections in use at once."""
        return self.size + self.max_overflow


class Settings(SettingsTable):
    """Every setting of the service (the rows of ``SettingsTable``), with how they are read and handed on. Its
    fields, constructor, equality and ``repr`` are the table's (a dataclass): this class adds methods only."""

    __slots__ = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, port: int = DEFAULT_PORT) -> Settings:
        """Read the ``MENUS_*`` variables of the table; base URL and issuer default to ``http://127.0.0.1:<port>``.

        An unset variable leaves its setting at its default; a set one is read by its row's grammar, which
        refuses a value it cannot use with a ``ConfigurationError`` naming the variable."""
        env = os.environ if env is None else env
        local = f"http://{DEFAULT_HOST}:{port}"
        values: dict[str, Any] = {"base_url": local, "issuer": local}  # their defaults follow the port
        for entry, variable, grammar in _VARIABLES:
            text = env.get(variable)
            if text is not None:
                values[entry.name] = grammar.read(variable, text, values.get(entry.name, entry.default))
        if values.get("mail_dir") and values.get("smtp_url"):
            raise ConfigurationError("set MENUS_SMTP_URL or MENUS_MAIL_DIR, not both: mail goes to one transport")
        return cls(**values)

    def with_changes(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]

    def lifetimes(self) -> Lifetimes:
        """The identity domain's lifetimes."""
        from identity.provider import Lifetimes

        return Lifetimes(
            access_token=timedelta(seconds=self.access_token_ttl),
            refresh_token=timedelta(seconds=self.refresh_token_ttl),
            session=timedelta(seconds=self.session_ttl),
            interaction=timedelta(seconds=self.interaction_ttl),
            key_publish_delay=timedelta(seconds=self.key_publish_delay),
            code=timedelta(seconds=self.code_ttl),
            public_refresh_token=timedelta(seconds=self.public_refresh_ttl),
            email_verification=timedelta(seconds=self.email_verification_ttl),
            password_reset=timedelta(seconds=self.password_reset_ttl),
        )

    def published_keys_interval(self) -> float:
        """Seconds between two background reads of the JWKS: the setting, at most a quarter of the publish delay
        (a key rotated on another node is published here within it, long before it signs), at least 0.25 s."""
        return max(0.25, min(self.published_keys_refresh, self.key_publish_delay / 4))

    def tuning(self) -> Tuning:
        """The identity domain's limits and cache ages."""
        from identity.accounts.device_cookies import DeviceCookiePolicy
        from identity.accounts.throttle import ThrottlePolicy
        from identity.provider import Tuning

        return Tuning(
            throttle=ThrottlePolicy(
                account_limit=self.sign_in_account_limit,
                address_limit=self.sign_in_address_limit,
                window=timedelta(seconds=self.sign_in_window),
            ),
            device_cookies=DeviceCookiePolicy(
                lifetime=timedelta(seconds=self.device_cookie_ttl), max_users=self.device_cookie_users
            ),
            signing_keys_max_age=timedelta(seconds=self.signing_keys_max_age),
            published_keys_max_age=timedelta(seconds=self.published_keys_max_age),
            published_keys_min_reload=timedelta(seconds=self.published_keys_min_reload),
            verified_tokens=self.verified_tokens,
            purge_grace=timedelta(seconds=self.purge_grace),
            delivery=self.delivery(),
            public_clients=self.public_clients,
            web_origins_max_age=timedelta(seconds=self.web_origins_max_age),
            clients_max_age=timedelta(seconds=self.clients_max_age),
            clients_kept=self.clients_kept,
            outbound_loopback=self.outbound_loopback,
            invitations_per_hour=self.invitations_per_hour,
            max_pending_invitations=self.max_pending_invitations,
            client_secret_grace=timedelta(seconds=self.client_secret_grace),
            upstream_keys_max_age=timedelta(seconds=self.upstream_keys_max_age),
            upstream_keys_min_refresh=timedelta(seconds=self.upstream_keys_min_refresh),
            upstream_clock_skew=timedelta(seconds=self.upstream_clock_skew),
        )

    def delivery(self) -> DeliveryPolicy:
        """How the outbox's mails are claimed and retried."""
        from identity.mail.outbox import DeliveryPolicy

        return DeliveryPolicy(
            lease=timedelta(seconds=self.mail_claim_lease),
            max_attempts=self.mail_max_attempts,
            first_retry=timedelta(seconds=self.mail_first_retry),
            longest_retry=timedelta(seconds=self.mail_longest_retry),
            batch=self.mail_batch,
        )

    def database_pool(self) -> Pool:
        """The connection pool of each process (and PostgreSQL's connect timeout)."""
        return Pool(
            size=self.database_pool_size,
            max_overflow=self.database_max_overflow,
            connect_timeout=self.database_connect_timeout,
        )


_VARIABLES: tuple[tuple[Entry, str, Grammar], ...] = tuple(
    (entry, entry.row.variable, entry.row.grammar)
    for entry in rows(SettingsTable)
    if entry.row.variable is not None and entry.row.grammar is not None
)


def _read_one(env: Mapping[str, str], name: str) -> Any:
    """The setting ``name`` as its variable in ``env`` sets it (its default when unset)."""
    entry, variable, grammar = next(each for each in _VARIABLES if each[0].name == name)
    text = env.get(variable)
    return entry.default if text is None else grammar.read(variable, text, entry.default)


def secret_keys_from(env: Mapping[str, str]) -> tuple[str, ...]:
    """``MENUS_SECRET_KEYS``: comma-separated Fernet keys (32 bytes, URL-safe base64); the first seals. Also read
    alone by the commands that open the database."""
    keys: tuple[str, ...] = _read_one(env, "secret_keys")
    return keys


def outbound_loopback_from(env: Mapping[str, str]) -> bool:
    """``MENUS_OUTBOUND_LOOPBACK`` (also read alone by ``clients create`` and ``update``)."""
    loopback: bool = _read_one(env, "outbound_loopback")
    return loopback


def max_keys_per_org_from(env: Mapping[str, str]) -> int:
    """``MENUS_MAX_KEYS_PER_ORG`` (also read alone by ``api-keys create``)."""
    most: int = _read_one(env, "max_keys_per_org")
    return most
