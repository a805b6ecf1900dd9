"""The settings table: every setting of the service is one row, a field written with
``setting(default, what it is for, env=its MENUS_* variable, grammar=how its text is read)`` (``rows.py``);
the default is stated here and nowhere else (tests take theirs from ``tests/support/defaults.py``).

A setting with a variable is read by ``Settings.from_env`` (``typed.py``); the others are fixed:
``create_app(Settings(...))`` sets them, in code and in tests. docs/operations.md's two tables are generated from
these rows (``python -m tools.settings_doc``) and a test fails when they differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from service.settings.grammars import (
    DATABASE_URL,
    FOLDER,
    HTTP_URL,
    MAIL_ADDRESS,
    MEMORY_STORAGE,
    NETWORKS,
    ORIGINS,
    SECRET_KEYS,
    SMTP_URL,
    STORAGE_URL,
    SWITCH,
    URL_PATH,
    WholeNumber,
)
from service.settings.rows import computed_setting, setting

DEFAULT_HOST = "127.0.0.1"  # serve on loopback unless told otherwise
DEFAULT_PORT = 8000  # the port serve listens on unless told otherwise (--port)
_LOCAL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
# Where state lives when MENUS_DATABASE_URL is unset: SQLite in ./var/ of the working directory, made absolute
# when read (default_database_url()), so that every message names the file whichever folder it is read from.
DEFAULT_DATABASE_PATH = Path("var") / "regional-menus.sqlite3"


def default_database_url() -> str:
    """SQLite in ``./var/regional-menus.sqlite3`` of the current folder, as an absolute path."""
    return f"sqlite:///{DEFAULT_DATABASE_PATH.absolute()}"


AT_LEAST_0, AT_LEAST_1, AT_LEAST_60 = WholeNumber(0), WholeNumber(1), WholeNumber(60)
KIB, MIB, MINUTE, HOUR, DAY = 1024, 1024 * 1024, 60, 3600, 24 * 3600


@dataclass(frozen=True, slots=True)
class SettingsTable:
    """Every setting of the service, one row each: its default, its variable (if any) and what it is for.
    ``Settings`` (``typed.py``) is this table with how it is read and what it hands to the domain."""

    # Server
    base_url: str = setting(
        _LOCAL,
        "public address of the menus API",
        env="MENUS_BASE_URL",
        grammar=HTTP_URL,
        shown="`http://127.0.0.1:<port>`",
    )
    issuer: str = setting(
        _LOCAL,
        "OpenID Connect issuer identifier",
        env="MENUS_ISSUER",
        grammar=HTTP_URL,
        shown="`http://127.0.0.1:<port>`",
    )
    graceful_timeout: int = setting(
        30, "seconds in-flight requests may take to finish after SIGTERM (`serve --workers`)"
    )
    keep_alive: int = setting(
        5, "seconds an idle keep-alive connection stays open (keep below the proxy's own idle timeout)"
    )
    trusted_proxies: tuple[str, ...] = setting(
        (),
        "reverse proxies (addresses or CIDR blocks, commas or spaces) whose `X-Forwarded-For` and `X-Forwarded-Proto`"
        " are believed ([security.md](security.md#reverse-proxies))",
        env="MENUS_TRUSTED_PROXIES",
        grammar=NETWORKS,
    )
    head_timeout: int = setting(
        10,
        "seconds a connection may take to send a whole request head; a slower one is closed"
        " ([security.md](security.md#request-heads))",
        env="MENUS_HEAD_TIMEOUT",
        grammar=AT_LEAST_1,
    )
    head_line_limit: int = setting(
        16 * KIB, "bytes of one header line (431 past it; the request line may take `head_limit`, 414 past it)"
    )
    head_limit: int = setting(64 * KIB, "bytes of a whole request head (431 past it)")
    head_fields_limit: int = setting(100, "header lines in a request head (431 past it; gunicorn's default)")
    # A request body is awaited before the request is admitted, and must arrive in time (408 else, and the
    # connection is closed: service/web/body_arrival.py); the rate and grace are Kestrel's MinRequestBodyDataRate.
    body_timeout: int = setting(
        10,
        "seconds a request body may take to arrive whole (and it must average `body_min_rate` after"
        " `body_rate_grace`); a slower one is answered 408 and its connection closed"
        " ([security.md](security.md#request-bodies))",
        env="MENUS_BODY_TIMEOUT",
        grammar=AT_LEAST_1,
    )
    body_min_rate: int = setting(
        240, "bytes a second a request body must average once `body_rate_grace` is over (408 else; Kestrel's default)"
    )
    body_rate_grace: float = setting(5.0, "seconds a request body may take before its rate counts")
    docs: bool = setting(
        True, "serve the OpenAPI documents and Swagger UI (`off`: every one is 404)", env="MENUS_DOCS", grammar=SWITCH
    )
    cors_origins: tuple[str, ...] = setting(
        ("*",),
        "origins whose pages may call the menus API, discovery, JWKS and userinfo (commas or spaces; empty: none)",
        env="MENUS_CORS_ORIGINS",
        grammar=ORIGINS,
    )
    cors_max_age: int = setting(600, "seconds a browser may keep a preflight's answer")
    console_path: str = setting(
        "/console",
        "where the developer console is served, below the base URL's host",
        env="MENUS_CONSOLE_PATH",
        grammar=URL_PATH,
    )
    validate_responses: bool = setting(False, "validate every response against the contract (on in tests)")

    # Database
    database_url: str = computed_setting(
        default_database_url,
        "SQLAlchemy URL of the state database (API keys, identity records, sessions, tokens, keys)",
        env="MENUS_DATABASE_URL",
        grammar=DATABASE_URL,
        shown="SQLite in `./var/regional-menus.sqlite3` of the current folder (made absolute)",
    )
    secret_keys: tuple[str, ...] = setting(
        (),
        "Fernet keys sealing signing keys and service secrets at rest (service/database/sealing_keys.py),"
        " comma-separated, the first seals ([security.md](security.md))",
        env="MENUS_SECRET_KEYS",
        grammar=SECRET_KEYS,
        shown="a key file beside the SQLite database",
    )
    database_connect_timeout: int = setting(5, "seconds to wait for PostgreSQL to accept a connection")
    database_pool_size: int = setting(5, "connections each process keeps open (SQLAlchemy's default)")
    database_max_overflow: int = setting(10, "more connections a process may open at busy times (SQLAlchemy's default)")
    ready_timeout: float = setting(3.0, "seconds a readiness probe waits for the database before answering 503")

    # Menus API limits
    rate_limit_per_minute: int = setting(
        600,
        "requests a minute per API key (a sliding window counter: [nodes.md](nodes.md))",
        env="MENUS_RATE_LIMIT",
        grammar=AT_LEAST_1,
    )
    rate_limit_storage: str = setting(
        MEMORY_STORAGE,
        "where the menus API's rate-limit windows live: each process, or `redis://host:port/db` for every node"
        " ([nodes.md](nodes.md)); sign-in counters are always in the state database",
        env="MENUS_RATE_LIMIT_STORAGE",
        grammar=STORAGE_URL,
    )
    redis_timeout: float = setting(
        0.5, "seconds a Redis connection or command may take before the rate limit fails open"
    )
    redis_retry_after_outage: float = setting(
        2.0, "seconds after a Redis failure during which requests do not wait for Redis"
    )
    redis_log_every: float = setting(60.0, "seconds between two log lines about the same Redis outage")
    redis_max_batch: int = setting(500, "rate-limit requests in one Redis pipeline at most (one command per key)")
    redis_allowance_share: int = setting(
        64,
        "a worker asks Redis for at most a 64th of the limit beyond the requests waiting, permits of a key it spends"
        " from memory (limits below 64 are counted request by request;"
        " [nodes.md](nodes.md#rate-limits-across-nodes))",
    )
    redis_allowance_max_age: float = setting(
        1.0, "seconds a worker keeps a key's permits before it gives back those unspent"
    )
    max_keys_per_org: int = setting(
        100,
        "active API keys an organization may have; the console (409) and `api-keys create` (exit 2) refuse one more",
        env="MENUS_MAX_KEYS_PER_ORG",
        grammar=AT_LEAST_1,
    )
    invitations_per_hour: int = setting(
        20,
        "invitation mails (new and sent again) an organization may send an hour; the console and the management API"
        " answer 429 past it",
        env="MENUS_INVITATIONS_PER_HOUR",
        grammar=AT_LEAST_1,
    )
    max_pending_invitations: int = setting(
        100,
        "pending invitations an organization may have; the console and the management API refuse one more (409)",
        env="MENUS_MAX_PENDING_INVITATIONS",
        grammar=AT_LEAST_1,
    )
    client_secret_grace: int = setting(
        HOUR,
        "seconds a client's previous secret keeps working after an owner or admin rotates it",
        env="MENUS_CLIENT_SECRET_GRACE",
        grammar=AT_LEAST_0,
    )
    management_body_limit: int = setting(64 * KIB, "bytes of a management API request body at most (413 beyond)")
    key_failures_per_minute: int = setting(
        30,
        "menus requests with an unknown API key per network per minute before 429"
        " ([security.md](security.md#api-key-guessing))",
        env="MENUS_KEY_FAILURES_PER_MINUTE",
        grammar=AT_LEAST_1,
    )
    live_keys_max_age: float = setting(
        1.0,
        "seconds a throttled network's keys are checked against a list of live keys this old (a newer key may get"
        " 429 that long)",
    )
    key_failure_networks: int = setting(
        10_000,
        "networks blocked for unknown API keys that a process remembers at most (the oldest block is forgotten first)",
    )
    api_key_cache_entries: int = setting(
        10_000, "verified API keys a process answers from memory at most (the oldest is dropped first)"
    )
    key_revocation_check: float = setting(0.25, "seconds between two reads of the revocation count by a busy process")
    key_revocation_bound: float = setting(
        1.0, "seconds after which a key revoked on another process or node is refused everywhere"
    )
    answer_cache_entries: int = setting(4096, "distinct menus URLs whose answer is kept")
    answer_cache_bytes: int = setting(
        32 * MIB, "body bytes the menus answer cache keeps (32 MiB), whatever the number of entries"
    )

    # Request limits and logs
    identity_form_limit: int = setting(
        64 * KIB, "bytes of the largest form an identity endpoint takes (64 KiB; more: 413)"
    )
    console_form_limit: int = setting(
        16 * KIB, "bytes of a console form (16 KiB; more: 413); a key's name is at most 200 characters"
    )
    logged_path_max: int = setting(512, "characters of the path kept in a log line")
    route_cache_paths: int = setting(
        4096,
        "distinct raw paths whose route template is remembered (metrics and logs; bounded: clients choose paths)",
    )
    # Overload (service/web/admission.py): past either bound a menus or identity request is answered 503 at once.
    max_in_flight: int = setting(
        128,
        "menus and identity requests one worker answers at once; one more is answered 503 at once"
        " ([Overload](#overload))",
    )
    max_queue_wait: float = setting(
        0.5,
        "seconds a menus or identity request may wait for the worker's event loop, after its head was read plus the"
        " loop's lag; a later one is answered 503 at once ([Overload](#overload))",
        env="MENUS_MAX_QUEUE_WAIT",
        grammar=AT_LEAST_1,
    )

    # Identity lifetimes
    access_token_ttl: int = setting(
        600,
        "seconds an access or ID token is valid (and a retired key keeps verifying)",
        env="MENUS_ACCESS_TOKEN_TTL",
        grammar=AT_LEAST_1,
    )
    refresh_token_ttl: int = setting(
        30 * DAY, "seconds a refresh token family may live", env="MENUS_REFRESH_TOKEN_TTL", grammar=AT_LEAST_1
    )
    session_ttl: int = setting(
        14 * DAY,
        "seconds a browser session lasts before the user signs in again",
        env="MENUS_SESSION_TTL",
        grammar=AT_LEAST_60,
    )
    interaction_ttl: int = setting(15 * MINUTE, "seconds a pending sign-in (its pages and forms) stays usable")
    key_publish_delay: int = setting(
        120,
        "seconds a rotated-in signing key is published in the JWKS before it signs",
        env="MENUS_KEY_PUBLISH_DELAY",
        grammar=AT_LEAST_0,
    )
    code_ttl: int = setting(
        60, "seconds an authorization code may be redeemed (RFC 6749 §4.1.2: short-lived; ten minutes at most)"
    )
    public_refresh_ttl: int = setting(
        DAY,
        "seconds a public client's refresh token family may live (RFC 9700 §4.14.2: shorter)",
        env="MENUS_PUBLIC_REFRESH_TTL",
        grammar=AT_LEAST_1,
    )
    email_verification_ttl: int = setting(DAY, "seconds a mailed email-verification link opens (single-use)")
    password_reset_ttl: int = setting(30 * MINUTE, "seconds a mailed password-reset link opens (single-use)")

    # Public clients (browser and native apps: docs/identity.md, "Browser and native apps")
    public_clients: bool = setting(
        False,
        "`on` (or `true`): public clients (`--auth-method none`, browser and native apps) may sign users in here,"
        " and discovery lists `none` ([identity.md](identity.md#browser-and-native-apps))",
        env="MENUS_PUBLIC_CLIENTS",
        grammar=SWITCH,
    )
    web_origins_max_age: float = setting(
        5.0,
        "seconds the public clients' registered web origins are kept before they are read again (an origin added"
        " with `clients update` answers CORS on every node within this time)",
    )

    # Identity throttling (identity/accounts/throttle.py)
    sign_in_account_limit: int = setting(
        5,
        "failed sign-ins per account (and attempts per account from one network) per `sign_in_window`; also the"
        " password-reset mails and the verification mails of a paused sign-in per account",
    )
    sign_in_address_limit: int = setting(
        20,
        'sign-in, sign-up, password-reset and "send a new link" requests per network per `sign_in_window`; also,'
        " on a counter of their own, the email steps of home-realm discovery",
    )
    sign_in_window: int = setting(
        15 * MINUTE, "seconds: a sign-in throttle counter restarts this long after its first count"
    )
    device_cookie_ttl: int = setting(
        30 * DAY,
        "seconds a device cookie exempts its browser from the per-network sign-in bound for its user"
        " ([security.md](security.md#device-cookies))",
        env="MENUS_DEVICE_COOKIE_TTL",
        grammar=AT_LEAST_60,
    )
    device_cookie_users: int = setting(5, "users one browser's device cookie remembers at most (the newest sign-ins)")

    # Identity caches
    signing_keys_max_age: float = setting(
        60.0,
        "seconds the keys that may sign are used before their table is read again (at most half"
        " `MENUS_KEY_PUBLISH_DELAY`)",
    )
    published_keys_max_age: float = setting(
        300.0, "seconds the verification keys (the JWKS) are used before they are read again"
    )
    published_keys_min_reload: float = setting(
        1.0, "seconds between two reloads caused by an unknown `kid` (a made-up `kid` costs no query)"
    )
    published_keys_refresh: float = setting(
        10.0,
        "seconds between two background reads of the JWKS that `/jwks` answers from memory (at most a quarter of"
        " `MENUS_KEY_PUBLISH_DELAY`, at least 0.25 s: a key rotated on any node is published by every node before it"
        " signs)",
    )
    clients_max_age: float = setting(
        1.0,
        "seconds a client's row is reused by client authentication (its secret is checked at every request; a client"
        " deleted or given a new secret elsewhere gets no token: the token's row is written only while the client"
        " holds that secret)",
    )
    clients_kept: int = setting(1024, "clients whose row client authentication keeps in memory at most")
    verified_tokens: int = setting(
        4096, "access tokens whose verified signature and claims are remembered (about 2 KiB each)"
    )

    # Developer console (service/console_api/)
    console_session_ttl: int = setting(
        8 * HOUR, "seconds a console session lasts (the provider's session may end it sooner)"
    )
    console_sign_in_ttl: int = setting(15 * MINUTE, "seconds a started console sign-in may take to come back")
    console_new_key_ttl: int = setting(120, "seconds between creating a key and the page that shows it (one redirect)")
    console_clock_skew: int = setting(60, "seconds of leeway on the console's check of an ID token's `iat` and `exp`")

    # Background work (service/ops/periodic.py runs the jobs)
    purge_interval: int = setting(
        HOUR,
        "seconds between purges of expired records (identity/purge.py; `0`: never)",
        env="MENUS_PURGE_INTERVAL",
        grammar=AT_LEAST_0,
    )
    purge_grace: int = setting(DAY, "seconds a row past its use is kept before the purge deletes it")
    usage_flush_interval: int = setting(
        5,
        "seconds between writes of the per-key usage counted in memory (and at shutdown)",
        env="MENUS_USAGE_FLUSH_INTERVAL",
        grammar=AT_LEAST_1,
    )
    last_used_resolution: int = setting(
        60, "seconds: an API key's last use is written at most this often per key and process"
    )

    # Mail (identity/mail/outbox.py, service/mail/)
    smtp_url: str = setting(
        "",
        "the mail server: `smtp://user:password@host:port` (port 587 by default; STARTTLS, required off loopback) or"
        " `smtps://…` (implicit TLS, port 465); user and password percent-encoded ([Mail](#mail))",
        env="MENUS_SMTP_URL",
        grammar=SMTP_URL,
    )
    mail_dir: str = setting(
        "",
        "a folder where mail is written as `.eml` files instead of sent (development; not together with"
        " `MENUS_SMTP_URL`). A node with neither has no mail transport: it claims no mail, warns at start and says"
        ' `"mail": "none"` in `/readyz` ([Mail](#mail))',
        env="MENUS_MAIL_DIR",
        grammar=FOLDER,
        shown="none (`serve --demo`: `outbox/` beside the SQLite database)",
    )
    mail_log_links: bool = setting(
        False,
        "one log line per mail written to the folder, with its file and its link as plain text (on in"
        " `serve --demo` only: the link carries a token)",
    )
    mail_from: str = setting(
        "Regional Menus <no-reply@localhost>",
        "the `From` of every mail the service sends (one address, bare or with a name)",
        env="MENUS_MAIL_FROM",
        grammar=MAIL_ADDRESS,
    )
    smtp_timeout: int = setting(
        30, "seconds an SMTP connection or command may take before the attempt fails (and is retried)"
    )
    mail_poll_interval: float = setting(
        2,
        "seconds between two looks of each node's mail worker into the outbox (a mail leaves within about this long)",
        env="MENUS_MAIL_POLL_INTERVAL",
        grammar=AT_LEAST_1,
    )
    mail_claim_lease: int = setting(600, "seconds a claimed mail is kept from other nodes; longer than any one send")
    mail_max_attempts: int = setting(
        10, "sends of one mail before it is given up (about nine hours with the waits below)"
    )
    mail_first_retry: float = setting(
        30, "seconds before a failed mail is tried again; the wait doubles at each failure"
    )
    mail_longest_retry: float = setting(HOUR, "seconds a failed mail waits at most before its next attempt")
    mail_batch: int = setting(20, "mails one worker round sends at most before looking again")
    # Back-channel logout (identity/sessions/backchannel_logout.py, service/outbound/): logout tokens leave through the
    # same outbox, claimed and retried as mail (the mail_* lease, attempts, waits and batch; MENUS_MAIL_POLL_INTERVAL)
    backchannel_logout_timeout: float = setting(
        5,
        "seconds a client's back-channel logout endpoint has, in all, to take the POST of a logout token and answer"
        " it (connecting, sending, the answer's status and headers); else the token is posted again later",
    )
    backchannel_per_host: int = setting(
        2,
        "back-channel logout tokens a node posts to one host at once; more for that host wait (put back for one"
        " post's deadline) without holding up other hosts",
    )
    backchannel_at_once: int = setting(32, "back-channel logout tokens a node posts at once, every host together")
    # Federation (identity/federation/, service/outbound/upstream.py): requests to organizations' own providers
    upstream_timeout: float = setting(
        5,
        "seconds an organization's identity provider has, in all, to answer one request (discovery, keys, token,"
        " UserInfo); else the sign-in shows a page saying it did not answer",
    )
    upstream_keys_max_age: int = setting(
        HOUR, "seconds an organization's provider's keys (its JWKS) are used before they are fetched again"
    )
    upstream_keys_min_refresh: int = setting(
        60, "seconds between two fetches of one provider's keys at least, however many tokens name an unknown key"
    )
    upstream_clock_skew: int = setting(60, "seconds of leeway on the iat and exp of a provider's ID and logout tokens")
    outbound_loopback: bool = setting(
        False,
        "`on` (or `true`): back-channel logout URIs may reach loopback addresses (development; `serve --demo` turns"
        " it on). Private, link-local and metadata addresses are refused whatever it says"
        " ([security.md](security.md#outbound-requests))",
        env="MENUS_OUTBOUND_LOOPBACK",
        grammar=SWITCH,
    )
