"""One typed settings object; every default lives here with a line saying what it is for."""

from __future__ import annotations

import base64
import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from email.utils import parseaddr
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:  # imported where used: reading settings (the command line's --help too) loads no domain
    from identity.outbox import DeliveryPolicy
    from identity.provider import Lifetimes, Tuning

# Server
DEFAULT_HOST = "127.0.0.1"  # serve on loopback unless told otherwise
DEFAULT_PORT = 8000  # the port serve listens on unless told otherwise (--port)
GRACEFUL_TIMEOUT = 30  # seconds in-flight requests may take to finish after SIGTERM (serve --workers)
KEEP_ALIVE = 5  # seconds an idle keep-alive connection stays open (keep below the proxy's own idle timeout)
TRUSTED_PROXIES: tuple[str, ...] = ()  # reverse proxies (addresses, CIDRs) whose X-Forwarded-For/-Proto are believed
HEAD_TIMEOUT = 10  # seconds a connection may take to send a whole request head (slow heads are closed)
HEAD_LINE_LIMIT = 16 * 1024  # bytes of one header line (431 past it); the request line may take HEAD_LIMIT (414)
HEAD_LIMIT = 64 * 1024  # bytes of a whole request head, request line and header lines (431 past it)
HEAD_FIELDS_LIMIT = 100  # header lines in a request head (431 past it; gunicorn's default)
# A request body is awaited before the request is admitted, and must arrive in time (408 else, and the connection
# is closed: service/web/body_arrival.py); the rate and grace are Kestrel's MinRequestBodyDataRate defaults.
BODY_TIMEOUT = 10  # seconds a whole request body may take to arrive
BODY_MIN_RATE = 240  # bytes a second a request body must average once its grace is over
BODY_RATE_GRACE = 5.0  # seconds a request body may take before its rate counts
CORS_ORIGINS = ("*",)  # origins whose pages may call the menus API, discovery, JWKS and userinfo (service/web/cors.py)
CORS_MAX_AGE = 600  # seconds a browser may keep a preflight's answer
CONSOLE_PATH = "/console"  # where the developer console is served, below the base URL's host

# Database
# Where state lives when MENUS_DATABASE_URL is unset: SQLite in ./var/ of the working directory, made absolute
# when read (default_database_url()), so that every message names the file whichever folder it is read from.
DEFAULT_DATABASE_PATH = Path("var") / "regional-menus.sqlite3"
DATABASE_CONNECT_TIMEOUT = 5  # seconds to wait for PostgreSQL to accept a connection
DATABASE_POOL_SIZE = 5  # connections each process keeps open (SQLAlchemy's default, stated here)
DATABASE_MAX_OVERFLOW = 10  # more connections a process may open at busy times (SQLAlchemy's default, stated here)
READY_TIMEOUT = 3.0  # seconds a readiness probe waits for the database before answering 503

# Menus API limits
DEFAULT_RATE_LIMIT = 600  # menus requests a minute per API key (a sliding window counter: docs/nodes.md)
DEFAULT_RATE_LIMIT_STORAGE = "memory://"  # rate-limit windows per process; redis://host:port/db: one for every node
REDIS_TIMEOUT = 0.5  # seconds a Redis connection or command may take before the limit fails open
REDIS_RETRY_AFTER_OUTAGE = 2.0  # seconds after a Redis failure during which requests do not wait for Redis
REDIS_LOG_EVERY = 60.0  # seconds between two log lines about the same Redis outage
REDIS_MAX_BATCH = 500  # rate-limit requests in one Redis pipeline at most (one command per key)
REDIS_ALLOWANCE_SHARE = 64  # a worker asks Redis for at most limit // this permits of a key beyond those it needs now
REDIS_ALLOWANCE_MAX_AGE = 1.0  # seconds a worker keeps a key's permits from Redis before giving back those unspent
MAX_KEYS_PER_ORG = 100  # active API keys an organization may have (console and command line refuse one more)
KEY_FAILURES_PER_MINUTE = 30  # requests with an unknown API key per network per minute before 429 (menus API)
LIVE_KEYS_MAX_AGE = 1.0  # seconds a throttled network's keys are checked against a list of live keys this old
KEY_FAILURE_NETWORKS = 10_000  # networks blocked for unknown API keys that a process remembers at most
API_KEY_CACHE_ENTRIES = 10_000  # verified API keys a process answers from memory at most (the oldest is dropped first)
KEY_REVOCATION_CHECK = 0.25  # seconds between two reads of the revocation count by a busy process
KEY_REVOCATION_BOUND = 1.0  # seconds after which a key revoked on another process or node is refused everywhere
ANSWER_CACHE_ENTRIES = 4096  # distinct menus URLs whose answer is kept
ANSWER_CACHE_BYTES = 32 * 1024 * 1024  # body bytes the menus answer cache keeps, whatever the number of entries

# Request limits and logs
IDENTITY_FORM_LIMIT = 64 * 1024  # bytes: the largest form an identity endpoint takes (a larger one is 413)
CONSOLE_FORM_LIMIT = 16 * 1024  # bytes of a console form; a key's name is at most 200 characters
LOGGED_PATH_MAX = 512  # characters of the path kept in a log line
# Overload (service/web/admission.py): past either bound a menus or identity request is answered 503 at once.
MAX_IN_FLIGHT = 128  # requests one worker answers at once
MAX_QUEUE_WAIT = 0.5  # seconds a request may wait for the event loop after its head was read
ROUTE_CACHE_PATHS = 4096  # distinct raw paths whose route template is remembered (bounded: clients choose paths)

# Identity lifetimes
ACCESS_TOKEN_TTL = 600  # seconds an access token (and an ID token) is valid
REFRESH_TOKEN_TTL = 30 * 24 * 3600  # seconds a refresh token family may live
SESSION_TTL = 14 * 24 * 3600  # seconds a browser session lasts before credentials are asked again
INTERACTION_TTL = 15 * 60  # seconds a pending sign-in (its pages and forms) stays usable
KEY_PUBLISH_DELAY = 120  # seconds a rotated-in signing key is published in the JWKS before it signs
CODE_TTL = 60  # seconds an authorization code may be redeemed (RFC 6749 §4.1.2: short; ten minutes at most)
EMAIL_VERIFICATION_TTL = 24 * 3600  # seconds a mailed email-verification link opens (single-use)
PASSWORD_RESET_TTL = 30 * 60  # seconds a mailed password-reset link opens (single-use)
PUBLIC_REFRESH_TTL = 24 * 3600  # seconds a public client's refresh token family may live (shorter: RFC 9700 §4.14.2)

# Public clients (browser and native apps: docs/identity.md, "Browser and native apps")
PUBLIC_CLIENTS = False  # whether clients of the auth method none may sign users in; discovery lists none only then
WEB_ORIGINS_MAX_AGE = 5.0  # seconds the registered web origins (CORS of token, revocation, userinfo) are kept

# Identity throttling (identity/throttle.py)
SIGN_IN_ACCOUNT_LIMIT = 5  # failed sign-ins per account (and attempts per account from one network) per window
SIGN_IN_ADDRESS_LIMIT = 20  # sign-in and sign-up attempts per network per window
SIGN_IN_WINDOW = 15 * 60  # seconds: a throttle counter restarts this long after its first count
DEVICE_COOKIE_TTL = 30 * 24 * 3600  # seconds a device cookie exempts its browser from the per-network sign-in bound
DEVICE_COOKIE_USERS = 5  # users one browser's device cookie remembers at most (the newest sign-ins)

# Identity caches
SIGNING_KEYS_MAX_AGE = 60.0  # seconds the keys that may sign are used before their table is read again
PUBLISHED_KEYS_MAX_AGE = 300.0  # seconds the verification keys (the JWKS) are used before they are read again
# seconds between two background reads of the JWKS that /jwks answers from memory; at most a quarter of
# MENUS_KEY_PUBLISH_DELAY is used (and at least 0.25 s), so every node publishes a rotated-in key before it signs
PUBLISHED_KEYS_REFRESH = 10.0
CLIENTS_MAX_AGE = 1.0  # seconds a client's row is reused by client authentication (its secret is checked each time)
CLIENTS_KEPT = 1024  # clients whose row client authentication keeps in memory at most
PUBLISHED_KEYS_MIN_RELOAD = 1.0  # seconds between two reloads caused by an unknown kid (a made-up kid costs no query)
VERIFIED_TOKENS = 4096  # access tokens whose verified signature and claims are remembered (about 2 KiB each)

# Developer console (service/console_api/)
CONSOLE_SESSION_TTL = 8 * 3600  # seconds a console session lasts (the provider's session may end it sooner)
CONSOLE_SIGN_IN_TTL = 15 * 60  # seconds a started console sign-in may take to come back
CONSOLE_NEW_KEY_TTL = 120  # seconds between creating a key and the page that shows it (one redirect)
CONSOLE_CLOCK_SKEW = 60  # seconds of leeway on the console's check of an ID token's iat and exp

# Background work
PURGE_INTERVAL = 3600  # seconds between purges of rows nothing can use any more (identity/purge.py); 0: never
PURGE_GRACE = 24 * 3600  # seconds a row past its use is kept before the purge deletes it
USAGE_FLUSH_INTERVAL = 5  # seconds between writes of the per-key usage counted in memory (and at shutdown)
LAST_USED_RESOLUTION = 60  # seconds: an API key's last use is written at most this often per key and process

# Mail (identity/outbox.py, service/mail/)
SMTP_URL = ""  # smtp://user:pass@host:port (STARTTLS) or smtps://…; empty: MENUS_MAIL_DIR, else no mail transport
MAIL_DIR = ""  # a folder where mail is written as .eml files instead (development); empty: none
MAIL_FROM = "Regional Menus <no-reply@localhost>"  # the From of every mail the service sends
SMTP_TIMEOUT = 30  # seconds an SMTP connection or command may take before the attempt fails (and is retried)
MAIL_POLL_INTERVAL = 2  # seconds between two looks of each node's mail worker into the outbox
MAIL_CLAIM_LEASE = 600  # seconds a claimed mail is kept from other nodes; longer than any one send
MAIL_MAX_ATTEMPTS = 10  # sends of one mail before it is given up (about nine hours with the waits below)
MAIL_FIRST_RETRY = 30  # seconds before a failed mail is tried again; the wait doubles at each failure
MAIL_LONGEST_RETRY = 3600  # seconds a failed mail waits at most before its next attempt
MAIL_BATCH = 20  # mails one worker round sends at most before looking again
# Back-channel logout (identity/backchannel_logout.py, service/outbound/): logout tokens leave through the same
# outbox, claimed and retried as mail (the MAIL_* lease, attempts, waits and batch; MAIL_POLL_INTERVAL)
BACKCHANNEL_LOGOUT_TIMEOUT = 5  # seconds, in all, a logout endpoint has to take and answer a POST (else retried)
BACKCHANNEL_PER_HOST = 2  # logout tokens posted to one host at once (more wait, without holding up other hosts)
BACKCHANNEL_AT_ONCE = 32  # logout tokens a node posts at once, every host together
# Outbound URIs (identity/outbound_uris.py): whether they may reach loopback addresses (development; on in serve
# --demo); private, link-local and metadata addresses are refused whatever this says
OUTBOUND_LOOPBACK = False


class ConfigurationError(ValueError):
    """A ``MENUS_*`` variable that cannot be used; the message names it and never repeats a secret."""


_CONTROL = re.compile(r"[\x00-\x20\x7f]")  # no control characters or spaces in a URL


def default_database_url() -> str:
    """SQLite in ``./var/regional-menus.sqlite3`` of the current folder, as an absolute path."""
    return f"sqlite:///{DEFAULT_DATABASE_PATH.absolute()}"


# MENUS_SECRET_KEYS: Fernet keys sealing signing keys and service secrets at rest
# (service/database/sealing_keys.py), comma-separated, the first seals and all open; unset: a key file made once
# beside the SQLite database (./var/secret-keys).


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


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting of the service; the constants above are the defaults, each with what it is for."""

    # Server
    base_url: str = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"  # MENUS_BASE_URL: public address of the menus API
    issuer: str = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"  # MENUS_ISSUER: OpenID Connect issuer identifier
    graceful_timeout: int = GRACEFUL_TIMEOUT
    keep_alive: int = KEEP_ALIVE
    trusted_proxies: tuple[str, ...] = TRUSTED_PROXIES  # MENUS_TRUSTED_PROXIES
    head_timeout: int = HEAD_TIMEOUT  # MENUS_HEAD_TIMEOUT
    head_line_limit: int = HEAD_LINE_LIMIT
    head_limit: int = HEAD_LIMIT
    head_fields_limit: int = HEAD_FIELDS_LIMIT
    body_timeout: int = BODY_TIMEOUT  # MENUS_BODY_TIMEOUT
    body_min_rate: int = BODY_MIN_RATE
    body_rate_grace: float = BODY_RATE_GRACE
    docs: bool = True  # MENUS_DOCS: serve the OpenAPI documents and Swagger UI (off: every one is 404)
    cors_origins: tuple[str, ...] = CORS_ORIGINS  # MENUS_CORS_ORIGINS
    cors_max_age: int = CORS_MAX_AGE
    console_path: str = CONSOLE_PATH  # MENUS_CONSOLE_PATH
    validate_responses: bool = False  # validate every response against the contract (on in tests)

    # Database
    database_url: str = field(default_factory=default_database_url)  # MENUS_DATABASE_URL
    secret_keys: tuple[str, ...] = ()  # MENUS_SECRET_KEYS; () means the key file
    database_connect_timeout: int = DATABASE_CONNECT_TIMEOUT
    database_pool_size: int = DATABASE_POOL_SIZE
    database_max_overflow: int = DATABASE_MAX_OVERFLOW
    ready_timeout: float = READY_TIMEOUT

    # Menus API limits
    rate_limit_per_minute: int = DEFAULT_RATE_LIMIT  # MENUS_RATE_LIMIT
    rate_limit_storage: str = DEFAULT_RATE_LIMIT_STORAGE  # MENUS_RATE_LIMIT_STORAGE: memory:// or redis://…
    redis_timeout: float = REDIS_TIMEOUT
    redis_retry_after_outage: float = REDIS_RETRY_AFTER_OUTAGE
    redis_log_every: float = REDIS_LOG_EVERY
    redis_max_batch: int = REDIS_MAX_BATCH
    redis_allowance_share: int = REDIS_ALLOWANCE_SHARE
    redis_allowance_max_age: float = REDIS_ALLOWANCE_MAX_AGE
    max_keys_per_org: int = MAX_KEYS_PER_ORG  # MENUS_MAX_KEYS_PER_ORG
    key_failures_per_minute: int = KEY_FAILURES_PER_MINUTE  # MENUS_KEY_FAILURES_PER_MINUTE
    live_keys_max_age: float = LIVE_KEYS_MAX_AGE
    key_failure_networks: int = KEY_FAILURE_NETWORKS
    api_key_cache_entries: int = API_KEY_CACHE_ENTRIES
    key_revocation_check: float = KEY_REVOCATION_CHECK
    key_revocation_bound: float = KEY_REVOCATION_BOUND
    answer_cache_entries: int = ANSWER_CACHE_ENTRIES
    answer_cache_bytes: int = ANSWER_CACHE_BYTES

    # Request limits and logs
    identity_form_limit: int = IDENTITY_FORM_LIMIT
    console_form_limit: int = CONSOLE_FORM_LIMIT
    logged_path_max: int = LOGGED_PATH_MAX
    route_cache_paths: int = ROUTE_CACHE_PATHS
    max_in_flight: int = MAX_IN_FLIGHT
    max_queue_wait: float = MAX_QUEUE_WAIT

    # Identity lifetimes
    access_token_ttl: int = ACCESS_TOKEN_TTL  # MENUS_ACCESS_TOKEN_TTL
    refresh_token_ttl: int = REFRESH_TOKEN_TTL  # MENUS_REFRESH_TOKEN_TTL
    session_ttl: int = SESSION_TTL  # MENUS_SESSION_TTL
    interaction_ttl: int = INTERACTION_TTL
    key_publish_delay: int = KEY_PUBLISH_DELAY  # MENUS_KEY_PUBLISH_DELAY
    code_ttl: int = CODE_TTL
    public_refresh_ttl: int = PUBLIC_REFRESH_TTL  # MENUS_PUBLIC_REFRESH_TTL
    email_verification_ttl: int = EMAIL_VERIFICATION_TTL
    password_reset_ttl: int = PASSWORD_RESET_TTL

    # Public clients
    public_clients: bool = PUBLIC_CLIENTS  # MENUS_PUBLIC_CLIENTS
    web_origins_max_age: float = WEB_ORIGINS_MAX_AGE

    # Identity throttling
    sign_in_account_limit: int = SIGN_IN_ACCOUNT_LIMIT
    sign_in_address_limit: int = SIGN_IN_ADDRESS_LIMIT
    sign_in_window: int = SIGN_IN_WINDOW
    device_cookie_ttl: int = DEVICE_COOKIE_TTL  # MENUS_DEVICE_COOKIE_TTL
    device_cookie_users: int = DEVICE_COOKIE_USERS

    # Identity caches
    signing_keys_max_age: float = SIGNING_KEYS_MAX_AGE
    published_keys_max_age: float = PUBLISHED_KEYS_MAX_AGE
    published_keys_min_reload: float = PUBLISHED_KEYS_MIN_RELOAD
    published_keys_refresh: float = PUBLISHED_KEYS_REFRESH
    clients_max_age: float = CLIENTS_MAX_AGE
    clients_kept: int = CLIENTS_KEPT
    verified_tokens: int = VERIFIED_TOKENS

    # Developer console
    console_session_ttl: int = CONSOLE_SESSION_TTL
    console_sign_in_ttl: int = CONSOLE_SIGN_IN_TTL
    console_new_key_ttl: int = CONSOLE_NEW_KEY_TTL
    console_clock_skew: int = CONSOLE_CLOCK_SKEW

    # Background work
    purge_interval: int = PURGE_INTERVAL  # MENUS_PURGE_INTERVAL
    purge_grace: int = PURGE_GRACE
    usage_flush_interval: int = USAGE_FLUSH_INTERVAL  # MENUS_USAGE_FLUSH_INTERVAL
    last_used_resolution: int = LAST_USED_RESOLUTION

    # Mail
    smtp_url: str = SMTP_URL  # MENUS_SMTP_URL
    mail_dir: str = MAIL_DIR  # MENUS_MAIL_DIR (serve --demo: its outbox folder, when neither is set)
    mail_log_links: bool = False  # one log line per mail written to the folder, with its link (serve --demo only)
    mail_from: str = MAIL_FROM  # MENUS_MAIL_FROM
    smtp_timeout: int = SMTP_TIMEOUT
    mail_poll_interval: float = MAIL_POLL_INTERVAL  # MENUS_MAIL_POLL_INTERVAL
    mail_claim_lease: int = MAIL_CLAIM_LEASE
    mail_max_attempts: int = MAIL_MAX_ATTEMPTS
    mail_first_retry: float = MAIL_FIRST_RETRY
    mail_longest_retry: float = MAIL_LONGEST_RETRY
    mail_batch: int = MAIL_BATCH
    backchannel_logout_timeout: float = BACKCHANNEL_LOGOUT_TIMEOUT
    backchannel_per_host: int = BACKCHANNEL_PER_HOST
    backchannel_at_once: int = BACKCHANNEL_AT_ONCE
    outbound_loopback: bool = OUTBOUND_LOOPBACK  # MENUS_OUTBOUND_LOOPBACK

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, port: int = DEFAULT_PORT) -> Settings:
        """Read ``MENUS_*`` variables; base URL and issuer default to ``http://127.0.0.1:<port>``."""
        env = os.environ if env is None else env
        local = f"http://{DEFAULT_HOST}:{port}"
        return cls(
            database_url=env.get("MENUS_DATABASE_URL") or default_database_url(),
            base_url=_url(env, "MENUS_BASE_URL", local),
            issuer=_url(env, "MENUS_ISSUER", local),
            rate_limit_per_minute=_whole(env, "MENUS_RATE_LIMIT", DEFAULT_RATE_LIMIT, minimum=1),
            rate_limit_storage=check_storage_url(env.get("MENUS_RATE_LIMIT_STORAGE", "")),
            max_keys_per_org=max_keys_per_org_from(env),
            key_failures_per_minute=_whole(env, "MENUS_KEY_FAILURES_PER_MINUTE", KEY_FAILURES_PER_MINUTE, minimum=1),
            key_publish_delay=_whole(env, "MENUS_KEY_PUBLISH_DELAY", KEY_PUBLISH_DELAY, minimum=0),
            access_token_ttl=_whole(env, "MENUS_ACCESS_TOKEN_TTL", ACCESS_TOKEN_TTL, minimum=1),
            refresh_token_ttl=_whole(env, "MENUS_REFRESH_TOKEN_TTL", REFRESH_TOKEN_TTL, minimum=1),
            public_refresh_ttl=_whole(env, "MENUS_PUBLIC_REFRESH_TTL", PUBLIC_REFRESH_TTL, minimum=1),
            public_clients=_switch(env, "MENUS_PUBLIC_CLIENTS", default=PUBLIC_CLIENTS),
            session_ttl=_whole(env, "MENUS_SESSION_TTL", SESSION_TTL, minimum=60),
            device_cookie_ttl=_whole(env, "MENUS_DEVICE_COOKIE_TTL", DEVICE_COOKIE_TTL, minimum=60),
            purge_interval=_whole(env, "MENUS_PURGE_INTERVAL", PURGE_INTERVAL, minimum=0),
            cors_origins=_origins(env.get("MENUS_CORS_ORIGINS", ",".join(CORS_ORIGINS))),
            docs=_switch(env, "MENUS_DOCS", default=True),
            secret_keys=secret_keys_from(env),
            console_path=_path(env, "MENUS_CONSOLE_PATH", CONSOLE_PATH),
            usage_flush_interval=_whole(env, "MENUS_USAGE_FLUSH_INTERVAL", USAGE_FLUSH_INTERVAL, minimum=1),
            trusted_proxies=_networks(env, "MENUS_TRUSTED_PROXIES"),
            head_timeout=_whole(env, "MENUS_HEAD_TIMEOUT", HEAD_TIMEOUT, minimum=1),
            body_timeout=_whole(env, "MENUS_BODY_TIMEOUT", BODY_TIMEOUT, minimum=1),
            smtp_url=_smtp_url(env),
            mail_dir=_mail_dir(env),
            mail_from=_mail_from(env),
            mail_poll_interval=_whole(env, "MENUS_MAIL_POLL_INTERVAL", MAIL_POLL_INTERVAL, minimum=1),
            outbound_loopback=outbound_loopback_from(env),
        )

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
        from identity.device_cookies import DeviceCookiePolicy
        from identity.provider import Tuning
        from identity.throttle import ThrottlePolicy

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
        )

    def delivery(self) -> DeliveryPolicy:
        """How the outbox's mails are claimed and retried."""
        from identity.outbox import DeliveryPolicy

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


def check_storage_url(url: str) -> str:
    """``memory://`` (also for an empty value) or a Redis URL; anything else is a configuration error."""
    url = url.strip() or DEFAULT_RATE_LIMIT_STORAGE
    if url != DEFAULT_RATE_LIMIT_STORAGE and not url.startswith(("redis://", "rediss://", "redis+unix://")):
        raise ConfigurationError(
            "MENUS_RATE_LIMIT_STORAGE must be memory:// or a redis://, rediss:// or redis+unix:// URL"
        )
    return url


def outbound_loopback_from(env: Mapping[str, str]) -> bool:
    """``MENUS_OUTBOUND_LOOPBACK`` (also read alone by ``clients create`` and ``update``)."""
    return _switch(env, "MENUS_OUTBOUND_LOOPBACK", default=OUTBOUND_LOOPBACK)


def max_keys_per_org_from(env: Mapping[str, str]) -> int:
    """``MENUS_MAX_KEYS_PER_ORG`` (also read alone by ``api-keys create``)."""
    return _whole(env, "MENUS_MAX_KEYS_PER_ORG", MAX_KEYS_PER_ORG, minimum=1)


def _whole(env: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    value = env.get(name, str(default))
    if not value.isascii() or not value.isdigit() or int(value) < minimum:
        raise ConfigurationError(f"{name} must be a whole number of at least {minimum}, got {value!r}")
    return int(value)


def _origins(value: str) -> tuple[str, ...]:
    """``MENUS_CORS_ORIGINS``: ``*``, or origins separated by commas or spaces (``https://a.example``); empty: none."""
    origins = tuple(origin.rstrip("/") for origin in value.replace(",", " ").split())
    for origin in origins:
        scheme, _, rest = origin.partition("://")
        if origin != "*" and (scheme not in ("http", "https") or not rest or "/" in rest):
            raise ConfigurationError(f"MENUS_CORS_ORIGINS: {origin!r} is not an origin (scheme://host[:port]) or *")
    return origins


def _url(env: Mapping[str, str], name: str, default: str) -> str:
    """An http(s) URL with a host, maybe a path, no query or fragment; without its trailing slash."""
    value = (env.get(name) or default).rstrip("/")
    try:
        parts = urlsplit(value)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and not parts.query and not parts.fragment
        parts.port  # noqa: B018  # raises ValueError for a port that is not a number from 0 to 65535
    except ValueError:
        valid = False
    if not valid or _CONTROL.search(value):
        raise ConfigurationError(f"{name} must be an http or https URL without query or fragment, got {value!r}")
    return value


def _networks(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    try:
        return parse_networks(env.get(name, ""), name)
    except ValueError as error:
        raise ConfigurationError(str(error)) from None


def _switch(env: Mapping[str, str], name: str, default: bool) -> bool:
    """``on`` or ``off``; ``true`` and ``false`` are read alike."""
    value = env.get(name, "on" if default else "off").strip().lower()
    if value not in ("on", "off", "true", "false"):
        raise ConfigurationError(f"{name} must be on or off (true or false), got {value!r}")
    return value in ("on", "true")


def secret_keys_from(env: Mapping[str, str]) -> tuple[str, ...]:
    """MENUS_SECRET_KEYS: comma-separated Fernet keys (32 bytes, URL-safe base64); the first seals."""
    keys = tuple(key.strip() for key in env.get("MENUS_SECRET_KEYS", "").split(",") if key.strip())
    for position, key in enumerate(keys, 1):
        try:
            valid = len(base64.urlsafe_b64decode(key.encode("ascii"))) == 32
        except (ValueError, UnicodeEncodeError):
            valid = False
        if not valid:  # never the key itself in the message
            raise ConfigurationError(
                f"MENUS_SECRET_KEYS: key {position} is not 32 bytes of URL-safe base64 "
                "(make one with 'regional-menus secrets new-key')"
            )
    return keys


def _smtp_url(env: Mapping[str, str]) -> str:
    """``MENUS_SMTP_URL``: empty, or a URL ``SmtpServer.parse`` takes (below)."""
    value = env.get("MENUS_SMTP_URL", SMTP_URL).strip()
    if value:
        if _CONTROL.search(value):
            raise ConfigurationError("MENUS_SMTP_URL must be smtp://[user:password@]host[:port] or smtps://…")
        try:
            SmtpServer.parse(value)
        except SmtpUrlError as error:
            raise ConfigurationError(str(error)) from None
    return value


def _mail_dir(env: Mapping[str, str]) -> str:
    """``MENUS_MAIL_DIR``: empty, or a folder (made absolute), never together with ``MENUS_SMTP_URL``."""
    value = env.get("MENUS_MAIL_DIR", MAIL_DIR).strip()
    if not value:
        return ""
    if env.get("MENUS_SMTP_URL", "").strip():
        raise ConfigurationError("set MENUS_SMTP_URL or MENUS_MAIL_DIR, not both: mail goes to one transport")
    if _CONTROL.search(value.replace(" ", "")):
        raise ConfigurationError("MENUS_MAIL_DIR must be a folder's path")
    return str(Path(value).absolute())


def _mail_from(env: Mapping[str, str]) -> str:
    """``MENUS_MAIL_FROM``: one address, bare (``menus@example.com``) or named (``Menus <menus@example.com>``)."""
    value = env.get("MENUS_MAIL_FROM", "").strip() or MAIL_FROM
    name, address = parseaddr(value)
    if (
        not address
        or "@" not in address
        or "," in value
        or re.search(r"[\x00-\x1f\x7f]", value)
        or (not name and address != value)
    ):
        raise ConfigurationError(f"MENUS_MAIL_FROM must be one email address, got {value!r}")
    return value


def _path(env: Mapping[str, str], name: str, default: str) -> str:
    """A path of its own below the host: ``/console``, ``/dev/console``; not the root, no trailing slash."""
    value = env.get(name) or default
    if not re.fullmatch(r"(/[A-Za-z0-9._~-]+)+", value) or value in ("/v1", "/healthz", "/readyz", "/metrics"):
        raise ConfigurationError(
            f"{name} must be a path such as /console (not the root, no trailing slash), got {value!r}"
        )
    return value


# The grammars of two settings, kept here so that settings check them at start without importing the code
# that uses them (service/web/forwarded.py, service/mail/transports.py): the layers below import nothing above.


def parse_networks(value: str, name: str = "MENUS_TRUSTED_PROXIES") -> tuple[str, ...]:
    """Addresses and CIDR blocks separated by commas or spaces (``10.0.0.2, 10.1.0.0/16, fd00::/8``); empty: none.

    A value that is not one is a configuration error naming ``name``."""
    networks = []
    for item in value.replace(",", " ").split():
        try:
            networks.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise ValueError(f"{name}: {item!r} is not an IP address or CIDR block (10.0.0.2, 10.0.0.0/8)") from None
    return tuple(networks)


# ``MENUS_SMTP_URL``: ``smtp://[user:password@]host[:port]`` (port 587 by default) or ``smtps://…`` (port 465 by
# default, implicit TLS, RFC 8314 §3.3); user and password are percent-decoded (RFC 3986 §2.1). The transports of
# service/mail/transports.py connect to what it names.


class SmtpUrlError(ValueError):
    """``MENUS_SMTP_URL`` cannot be used; the message never repeats the password."""


@dataclass(frozen=True, slots=True)
class SmtpServer:
    host: str
    port: int
    implicit_tls: bool  # smtps://
    username: str | None
    password: str | None

    @classmethod
    def parse(cls, url: str) -> SmtpServer:
        """``smtp://user:pass@host:port`` or ``smtps://…``."""
        try:
            parts = urlsplit(url.strip())
            port = parts.port
        except ValueError:
            raise SmtpUrlError("MENUS_SMTP_URL must be smtp://[user:password@]host[:port] or smtps://…") from None
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname or parts.path not in ("", "/") or parts.query:
            raise SmtpUrlError("MENUS_SMTP_URL must be smtp://[user:password@]host[:port] or smtps://…")
        implicit = parts.scheme == "smtps"
        return cls(
            host=parts.hostname,
            port=port or (465 if implicit else 587),
            implicit_tls=implicit,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password is not None else None,
        )

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def describe(self) -> str:
        """The server without its credentials, for logs and messages."""
        return f"{'smtps' if self.implicit_tls else 'smtp'}://{self.host}:{self.port}"
