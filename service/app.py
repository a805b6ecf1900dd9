"""The app factory: one ASGI callable serving every API of the service.

``create_app(settings)`` opens the state database, loads and validates the
dataset, and joins the APIs with a small dispatcher that routes by path and
answers the ASGI lifespan itself. Every request passes one edge (``service/web/edge.py``): one ASGI layer
that wraps ``send`` once and calls, in order, the observer (``service/ops/observe.py``: the request's id,
its metrics and its log line), the arrival of a request body (``service/web/body_arrival.py``), the worker's
admission, the API's steps (CORS, the documents, the body cap, the menus API's gate)
and the API's app, and answers an error that escapes them as a problem.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy.engine import Engine
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from data.catalog import Catalog, load_catalog
from identity.accounts.passwords import OWASP_ARGON2ID, PasswordHashing
from identity.api_keys.console_rules import Console
from identity.api_keys.keys import ApiKeyStore
from identity.api_keys.usage import UsageCounter, UsageReport
from identity.common import audit
from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.errors import InvalidInput
from identity.common.issuer import Issuer
from identity.federation.upstream_http import UpstreamHttp
from identity.keys.sealing import Sealer
from identity.keys.signing_keys import NewKey, new_private_key
from identity.organizations.keys import OrganizationKeys
from identity.provider import Provider
from identity.sessions.console_sessions import ConsoleSessionStore
from service.background_jobs import background_jobs
from service.console_api.console_web import ConsoleWeb
from service.console_api.cookies import CookieLifetimes, Cookies
from service.console_api.relying_party import ConsoleClient, client_secret
from service.database.db import client_threads, make_engine, service_secret, service_secrets_named
from service.database.schema import require_current
from service.database.sealing_keys import load_sealer, reseal
from service.identity_api.client_cors import ClientCrossOrigin
from service.identity_api.identity_app import create_identity_app
from service.identity_api.published import PublishedDocuments
from service.mail.transports import Courier
from service.management_api.paths import MANAGEMENT_PATH, is_management_path
from service.menus_api.answer_cache import AnswerCache
from service.menus_api.key_cache import KeyCache
from service.menus_api.key_failures import KeyFailures
from service.menus_api.limit_storage import RedisTuning, StorageHealth
from service.menus_api.menus_app import BASE_PATH, create_menus_app
from service.menus_api.menus_problems import send_overloaded
from service.menus_api.rate_limiter import RateLimiter
from service.ops import metrics
from service.ops.health import Readiness
from service.ops.observe import RequestObserver
from service.ops.operations_app import DOCUMENT_PREFIX, create_operations_app, is_operations_path
from service.ops.periodic import BackgroundJobs, RunningJobs
from service.ops.route_templates import RouteTemplates
from service.outbound.backchannel import LogoutCourier, LogoutPoster
from service.outbound.upstream import UpstreamRequests
from service.settings import Settings
from service.web.admission import Admission
from service.web.api_docs import Documentation
from service.web.body_arrival import BodyTiming, BodyWatch
from service.web.body_limit import NO_BODY, BodyCap, describe
from service.web.contracts import contract
from service.web.cors import CrossOrigin, cross_origin_paths
from service.web.edge import Api, Bodies, Observer, Step, Stepped, answer
from service.web.forwarded import TrustedProxies
from service.web.problems import (
    MEDIA_TYPE,
    content_too_large,
    nothing_here,
    send_problem,
)
from service.web.served_documents import ServedDocument

logger = logging.getLogger(__name__)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass
class Dispatcher:
    """Routes the operations endpoints, ``/v1`` to the menus API, the issuer's path to the identity API, else 404,
    and answers each HTTP request through the edge (``service.web.edge.answer``) with ``observer``."""

    menus: Api
    identity: Api
    operations: Api
    identity_path: str  # the issuer's path; "" when the issuer is at the root
    engine: Engine
    owns_engine: bool = True  # the app made its engine, and disposes it at its last lifespan's end (else the caller)
    observer: Observer | None = None  # the request observer (service/ops/observe.py); needed for HTTP
    admission: Admission | None = None  # this worker's bound of accepted work (service/web/admission.py)
    bodies: BodyWatch | None = None  # the request bodies awaited, and how fast (service/web/body_arrival.py)
    on_shutdown: Callable[[], Awaitable[None]] | None = None  # closes the rate limit's Redis connections
    console: Api | None = None  # the developer console, at console_path
    console_path: str = ""  # given with console
    management: Api | None = None  # the management API, at /management/v1 (openapi/management.yaml)
    # the worker's background jobs (service/ops/periodic.py), started and stopped with the lifespan
    background: BackgroundJobs = field(default_factory=BackgroundJobs)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        api = self.route(scope["path"])
        if kind != "http":
            await api.app(scope, receive, send)
            return
        assert self.observer is not None
        await answer(api, self.observer, scope, receive, send, self.admission, self.bodies)

    def route(self, path: str) -> Api:
        """The API that answers ``path``."""
        if self.console is not None and (path == self.console_path or path.startswith(self.console_path + "/")):
            return self.console  # HTML pages, even for its errors
        if _CONTROL.search(path):
            # A decoded control character (%0A…) is never a path of ours; Connexion would answer 500.
            return NOT_FOUND
        if is_operations_path(path):
            return self.operations
        if self.management is not None and is_management_path(path):
            return self.management
        if path.startswith("/v1/"):  # "/v1" itself is a 404 here: Starlette would redirect it, from Host
            return self.menus
        if not self.identity_path or path.startswith(self.identity_path + "/"):
            return self.identity
        return NOT_FOUND

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        running: RunningJobs | None = None
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                running = self.background.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if running is not None:
                    await running.stop()  # a purge or a flush under way finishes first; then the last flush
                if not self.background.running:
                    # The app's last lifespan: a server runs one, but an app may run several at once (the tests'
                    # browsers on one app), and another's jobs may be using a connection the pool would drop.
                    if self.on_shutdown is not None:
                        await self.on_shutdown()
                    if self.owns_engine:  # an engine handed in may serve others still: its owner disposes it
                        self.engine.dispose()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _not_found(scope: Scope, receive: Receive, send: Send) -> None:
    await send_problem(send, nothing_here())


NOT_FOUND = Api(_not_found)  # a path of no API of ours
# The service secrets every start reads, in one transaction (service/database/db.py: service_secrets_named); the
# console's cookie key is read once the console is on (console_web).
SHARED_SECRETS = ("menus-cursor-key", "directory-cursor-key", "device-cookie-key", "console-client-secret")


def create_app(
    settings: Settings | None = None,
    *,
    catalog: Catalog | None = None,
    clock: Clock | None = None,
    password_hashing: PasswordHashing = OWASP_ARGON2ID,
    fast_forms: bool = True,
    upstream: UpstreamHttp | None = None,
    new_signing_key: NewKey = new_private_key,
    engine: Engine | None = None,
) -> Dispatcher:
    """The service's ASGI app. ``catalog``: a dataset already loaded (tests build many apps in one process);
    it signs its cursors with this database's key all the same. ``clock``: the time every object of the
    identity domain reads (the system's by default; tests move it). ``password_hashing``: Argon2id at OWASP's
    parameters, always, in the service; the tests hand in a cheaper one (``tests/support/passwords.py``).
    ``new_signing_key``: where the first signing key's RSA key comes from, a new one always in the service; the
    tests hand in keys made once a process (``tests/support/signing_keys.py``). The
    contracts are parsed once per process (``service.web.contracts.contract``). ``fast_forms``: False leaves every
    identity form to Connexion's parser and its own validation middleware (the differential test's reference:
    service/web/connexion_adapter.py). ``engine``: the state database's engine, made by ``make_engine`` for
    ``settings.database_url`` and its pool; a new one by default, which the app disposes at its last lifespan's end.
    An engine handed in stays its caller's, open: the tests hand in one of the engines they keep for a database
    (``tests/support/engines.py``: SQLAlchemy caches the statements it compiles per engine), which other apps use
    at the same time."""
    settings = settings or Settings.from_env()
    clock = clock or SYSTEM_CLOCK
    audit.listen(metrics.count_security_event)  # the security counters of /metrics (once per process)
    pool = settings.database_pool()
    own_engine = engine is None
    engine = engine or make_engine(settings.database_url, pool)
    require_current(engine)  # SchemaOutOfDate names the command to run
    sealer = load_sealer(settings.secret_keys, settings.database_url)
    reseal(engine, sealer, rotate=False)  # a database from before sealing: its clear rows sealed (once; CAS per row)
    shared = service_secrets_named(engine, sealer, SHARED_SECRETS)  # one read, once they exist
    cursor_key = shared["menus-cursor-key"]
    catalog = catalog.with_cursor_key(cursor_key) if catalog is not None else load_catalog(cursor_key=cursor_key)
    redis = RedisTuning.of(settings)
    # the Redis of the rate limits, as this process sees it
    limit_storage = StorageHealth(redis.retry_after_outage, redis.log_every)
    limiter = RateLimiter(
        settings.rate_limit_per_minute, settings.rate_limit_storage, redis=redis, health=limit_storage
    )
    keys = ApiKeyStore(engine, clock, max_per_org=settings.max_keys_per_org)
    # failed key lookups per network, in the same storage as the per-key limit (service/menus_api/key_failures.py)
    failure_limiter = RateLimiter(
        settings.key_failures_per_minute, settings.rate_limit_storage, redis=redis, health=limit_storage
    )
    usage = UsageCounter(engine, timedelta(seconds=settings.last_used_resolution), clock)
    menus = create_menus_app(
        catalog=catalog,
        keys=KeyCache(
            keys,
            entries=settings.api_key_cache_entries,
            check_every=settings.key_revocation_check,
            bound=settings.key_revocation_bound,
            clock=clock.monotonic,  # the app's clock: a test moves the revocation bound past instead of waiting
        ),
        limiter=limiter,
        answers=AnswerCache(settings.answer_cache_entries, settings.answer_cache_bytes),
        api_url=settings.base_url + BASE_PATH,
        validate_responses=settings.validate_responses,
        usage=usage,
        failures=KeyFailures(
            failure_limiter,
            keys,
            live_keys_max_age=settings.live_keys_max_age,
            networks=settings.key_failure_networks,
        ),
    )
    tuning = settings.tuning()
    provider = Provider(
        engine,
        Issuer(settings.issuer),
        settings.lifetimes(),
        tuning,
        cursor_key=shared["directory-cursor-key"],
        sealer=sealer,
        device_key=shared["device-cookie-key"],
        clock=clock,
        password_hashing=password_hashing,
        invitation_link=settings.base_url + settings.console_path + "/invitation",
        # an organization's own provider, reached within the outbound rule (tests hand in one in process)
        upstream=upstream or UpstreamRequests(timeout=settings.upstream_timeout, loopback=settings.outbound_loopback),
        new_signing_key=new_signing_key,
    )
    provider.start()
    organization_keys = OrganizationKeys(keys, provider.trail, shared["directory-cursor-key"])
    identity = create_identity_app(
        provider,
        client_threads=client_threads(engine, pool),
        form_limit=settings.identity_form_limit,
        validate_responses=settings.validate_responses,
        fast_forms=fast_forms,
    )
    console_secret = shared["console-client-secret"]
    web = console_web(settings, engine, sealer, provider, keys, clock, organization_keys, client_shared=console_secret)
    console = None
    if web is not None:
        too_slow = web.too_slow
        console = Api(
            BuiltOnFirstRequest(lambda: _console_app(web, settings)),
            bodies=Bodies(settings.console_form_limit, lambda scope, send: too_slow()(scope, _no_body, send)),
        )
    no_body = BodyCap(NO_BODY, _problem_too_large)
    routes = RouteTemplates(
        [
            ("menus.yaml", "/v1", "/v1"),
            ("identity.yaml", provider.issuer.path, provider.issuer.path),
            ("operations.yaml", "", DOCUMENT_PREFIX.rstrip("/")),
            ("console.yaml", settings.console_path, settings.console_path),
            ("management.yaml", MANAGEMENT_PATH, MANAGEMENT_PATH),
        ],
        cached_paths=settings.route_cache_paths,
    )
    proxies = TrustedProxies.of(settings.trusted_proxies) if settings.trusted_proxies else None
    mail = Courier.of(
        provider.outbox,
        smtp_url=settings.smtp_url,
        mail_dir=settings.mail_dir,
        mail_from=settings.mail_from,
        timeout=settings.smtp_timeout,
        log_links=settings.mail_log_links,
    )
    if mail is None:  # docs/operations.md "Mail": the outbox's mail is left to a node that has a transport
        logger.warning(
            "this node has no mail transport (neither MENUS_SMTP_URL nor MENUS_MAIL_DIR is set): it sends no mail, "
            "and the outbox's mail waits for a node that has one"
        )
    logouts = LogoutCourier(
        provider.logout_outbox,
        provider.logout_tokens,
        LogoutPoster(timeout=settings.backchannel_logout_timeout, loopback=settings.outbound_loopback),
        poll_interval=settings.mail_poll_interval,
        per_host=settings.backchannel_per_host,
        at_once=settings.backchannel_at_once,
    )
    provider.logout_written.listen(logouts.wake)  # a revocation's logout tokens leave as it commits
    admission = Admission(settings.max_in_flight, settings.max_queue_wait, on_refused=metrics.count_shed)
    return Dispatcher(
        menus=Api(
            menus.app,
            (*documented(settings, "menus.yaml", "/v1", settings.base_url + "/v1"), no_body, *menus.steps),
            send_overloaded,
        ),
        identity=Api(
            ClientCrossOrigin(
                identity.app,
                issuer_path=provider.issuer.path,
                origins=provider.web_origins,
                userinfo_origins=settings.cors_origins,
                max_age=settings.cors_max_age,
            ),
            # discovery and the JWKS from memory, before the identity API's app (service/identity_api/published.py)
            (
                *documented(settings, "identity.yaml", provider.issuer.path, settings.issuer),
                PublishedDocuments.of(provider),
            ),
            identity.overloaded,
            Bodies(settings.identity_form_limit, identity.too_slow),
        ),
        operations=Api(
            create_operations_app(
                Readiness(engine, limiter.reachable, timeout=settings.ready_timeout, mail=mail.kind if mail else "none")
            ),
            (*documented(settings, "operations.yaml", "/ops", settings.base_url), no_body),
        ),
        identity_path=provider.issuer.path,
        engine=engine,
        owns_engine=own_engine,
        observer=RequestObserver(routes, logged_path_max=settings.logged_path_max, proxies=proxies),
        # the operations endpoints and the console are not bounded: docs/operations.md "Overload"
        admission=admission,
        bodies=BodyWatch(BodyTiming(settings.body_timeout, settings.body_min_rate, settings.body_rate_grace)),
        on_shutdown=lambda: _close_all(limiter, failure_limiter),
        console=console,
        console_path=settings.console_path,
        management=Api(
            BuiltOnFirstRequest(lambda: _management_app(settings, provider, organization_keys)),
            (
                *documented(settings, "management.yaml", MANAGEMENT_PATH, settings.base_url + MANAGEMENT_PATH),
                BodyCap(settings.management_body_limit, _problem_too_large),
            ),
        ),
        background=BackgroundJobs(background_jobs(settings, provider, usage, mail, admission, logouts)),
    )


class BuiltOnFirstRequest:
    """An ASGI app built when its first request arrives: the developer console, whose Connexion app a node that
    only serves the APIs never needs (start-up time and memory). The build runs once, on the event loop, with no
    await before the app is kept: two first requests cannot build it twice."""

    def __init__(self, build: Callable[[], ASGIApp]) -> None:
        self._build: Callable[[], ASGIApp] | None = build
        self._app: ASGIApp | None = None

    @property
    def built(self) -> bool:
        return self._app is not None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            assert self._build is not None
            self._app, self._build = self._build(), None
        await self._app(scope, receive, send)


def _management_app(settings: Settings, provider: Provider, keys: OrganizationKeys) -> ASGIApp:
    """The management API (openapi/management.yaml), built at its first request."""
    from service.management_api.management_app import create_management_app
    from service.management_api.management_web import ManagementWeb

    web = ManagementWeb(
        url=settings.base_url + MANAGEMENT_PATH,
        verifier=provider.verifier,
        clients=provider.clients,
        members=provider.members,
        invitations=provider.invitations,
        applications=provider.applications,
        keys=keys,
        journal=provider.trail,
        idempotency=provider.idempotency,
        connection=provider.connection_administration,
    )
    return create_management_app(web, validate_responses=settings.validate_responses)


def _console_app(web: ConsoleWeb, settings: Settings) -> ASGIApp:
    from service.console_api.console_app import create_console_app

    url = settings.base_url + settings.console_path
    steps = documented(settings, "console.yaml", settings.console_path, url, pages_end_in_slash=True)
    return Stepped(create_console_app(web, validate_responses=settings.validate_responses), steps)


def documented(
    settings: Settings, name: str, prefix: str, server_url: str, *, pages_end_in_slash: bool = False
) -> tuple[Step, ...]:
    """The edge's steps of an API: CORS, then its document ``name`` as written (at ``{prefix}/openapi.json``, with
    ``server_url``) and the Swagger UI's guard."""
    origin = "/".join(server_url.split("/", 3)[:3])
    document = ServedDocument.build(contract(name), server_url)
    documentation = Documentation(
        prefix=prefix,
        document=document,
        enabled=settings.docs,
        api_origin=origin,
        pages_end_in_slash=pages_end_in_slash,
        title=str(contract(name).document["info"]["title"]),
    )
    issuer_path = prefix if name == "identity.yaml" else None
    cors = CrossOrigin(
        origins=settings.cors_origins,
        selected=cross_origin_paths(issuer_path),
        max_age=settings.cors_max_age,
    )
    return cors, documentation


async def _close_all(*limiters: RateLimiter) -> None:
    for each in limiters:
        await each.aclose()


async def _no_body() -> Message:
    return {"type": "http.disconnect"}


def _problem_too_large(_: Scope, limit: int) -> Response:
    problem = content_too_large(describe(limit))
    return Response(problem.body(), status_code=413, media_type=MEDIA_TYPE)


def console_web(
    settings: Settings,
    engine: Engine,
    sealer: Sealer,
    provider: Provider,
    keys: ApiKeyStore,
    clock: Clock,
    organization_keys: OrganizationKeys | None = None,
    *,
    client_shared: bytes,
) -> ConsoleWeb | None:
    """The developer console, registered as a client of the provider (one registration for every node).

    None, with a warning, when the base URL cannot carry a redirect URI (plain http off loopback): the
    service runs without its console rather than send sign-ins over an unprotected channel. ``client_shared``: the
    service secret "console-client-secret", which its client's secret derives from (read with the others by
    ``create_app``)."""
    console_url = settings.base_url + settings.console_path
    client = ConsoleClient(
        provider,
        console_url,
        client_secret(client_shared),
        clock_skew=settings.console_clock_skew,
    )
    try:
        client.register()
    except InvalidInput as error:
        logger.warning("the developer console is off: %s (MENUS_BASE_URL must be https, or http on loopback)", error)
        return None
    web = ConsoleWeb(
        path=settings.console_path,
        base_url=settings.base_url,
        issuer_url=provider.issuer.url,
        client=client,
        cookies=Cookies(
            service_secret(engine, sealer, "console-cookie-key"),
            CookieLifetimes(settings.console_session_ttl, settings.console_sign_in_ttl, settings.console_new_key_ttl),
            clock,
        ),
        console=Console(engine, keys, provider.users, UsageReport(engine, clock)),
        sessions=provider.sessions,
        console_sessions=ConsoleSessionStore(engine, timedelta(seconds=settings.console_session_ttl), clock),
        secure=provider.issuer.secure or console_url.startswith("https://"),
        form_limit=settings.console_form_limit,
        own_account=provider.own_account,
        signed_in=provider.trail.console_sign_in,
    )
    if organization_keys is not None:
        from service.console_api.organization_pages import OrganizationPages

        web.organization = OrganizationPages(
            web, provider.members, provider.invitations, provider.applications, provider.trail, organization_keys
        )
        from service.console_api.connection_pages import ConnectionPages

        web.connection = ConnectionPages(web, provider.connection_administration)
    return web
