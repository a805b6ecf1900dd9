"""Posting logout tokens to clients (OpenID Connect Back-Channel Logout 1.0 §2.5), from the outbox's
``backchannel_logout`` channel (identity/mail/outbox.py, identity/sessions/backchannel_logout.py).

**When.** The courier is a task of each worker's lifespan. It looks into the outbox at once when a revocation on
this node that wrote logout tokens has committed (the provider's ``logout_written`` doorbell: end-session, a
password reset, a browser signing in as someone else), and otherwise every poll interval, for the tokens written
elsewhere (another node, the command line) and those due for a retry.

**How many at once.** Each token is posted by a delivery of its own, at most ``at_once`` at a time on this node,
and at most ``per_host`` at a time to one host: one client's endpoint that is slow or away holds up no other
client's token. A token for a host already at its bound is put back, due again after one post's deadline, without
counting an attempt (``Outbox.defer``), so it does not wait in this worker holding a place either.

**Each post** is one POST of ``logout_token=…`` (``application/x-www-form-urlencoded``) to the client's registered
URI, with httpx: the URI's host is resolved first and every address it resolves to is checked against the outbound
rule (identity/common/outbound_uris.py: no loopback, private, link-local or metadata address, unless allowed); the
request then goes to the checked address itself, with the URI's host in ``Host`` and in TLS's server name (httpx's
``sni_hostname`` extension), so the name is never resolved again (DNS rebinding). One deadline bounds the whole
exchange (resolving, connecting, sending, and the answer's status line and headers: httpx's own timeouts bound
each read and write alone, so an endpoint that trickles its answer a byte at a time would otherwise hold the post
past the claim's lease); no redirect is followed (a 3xx is an answer like any other), no proxy from the
environment, and the answer's body is never read. §2.8: a 200 (or a 204, which some frameworks send for it) means
the client logged out; anything else, or no answer, is tried again with the outbox's backoff until its attempts run
out. The database work (claiming, signing the token with the client's record, marking) runs in threads, never on
the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable, Callable
from functools import partial
from urllib.parse import urlsplit

import httpx

from identity.common.outbound_uris import Address, OutboundRule, RefusedAddress
from identity.mail.outbox import PENDING, Claimed, Outbox, Undeliverable
from identity.tokens.logout_tokens import LogoutPost, LogoutTokens
from service.outbound.addresses import addresses_of, destination_of
from service.web.offload import in_background

logger = logging.getLogger(__name__)
SUCCESS = frozenset({200, 204})
Resolve = Callable[[str, int], Awaitable[list[Address]]]


async def resolve(host: str, port: int) -> list[Address]:
    """Every address ``host`` resolves to for a TCP connection (``addresses_of``), resolved off the event loop on
    the background rounds' threads."""
    return await in_background(addresses_of, host, port)


class LogoutPoster:
    """Posts one logout token to its client's endpoint (see above): the checked address, one deadline."""

    def __init__(
        self,
        *,
        timeout: float,
        loopback: bool = False,
        resolver: Resolve = resolve,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.timeout = timeout  # the whole exchange's deadline, in seconds
        self.loopback = loopback  # the node allows loopback addresses (MENUS_OUTBOUND_LOOPBACK)
        self._resolve = resolver  # tests may give one (a name that resolves where they say)
        self._transport = transport  # tests may give one; else httpx's own
        self._tls: ssl.SSLContext | None = None  # made for the first post (httpx loads then), shared by every post

    async def post(self, logout: LogoutPost) -> int:
        """The answer's status; ``RefusedAddress`` when the host resolves to an address the rule refuses,
        ``TimeoutError`` past the deadline, httpx's errors when there is no answer."""
        destination = destination_of(logout.uri)
        host = destination.host
        rule = OutboundRule(loopback=self.loopback, internal=logout.internal)
        if self._tls is None:
            self._tls = httpx.create_ssl_context()  # httpx's certificate authorities, as each client would load
        async with asyncio.timeout(self.timeout):
            address = rule.check_resolved(host, await self._resolve(host, destination.port))
            url = httpx.URL(logout.uri).copy_with(host=str(address))
            async with (
                # a client per post: a connection verified for one host is never reused for another on its address
                httpx.AsyncClient(
                    verify=self._tls,
                    timeout=self.timeout,
                    follow_redirects=False,
                    trust_env=False,
                    transport=self._transport,
                ) as http,
                http.stream(
                    "POST",
                    url,
                    data={"logout_token": logout.token},
                    headers={"Cache-Control": "no-store", "Host": destination.host_header},
                    extensions={"sni_hostname": host},
                ) as answer,
            ):
                return answer.status_code


class LogoutCourier:
    """The logout worker of one process: ``run`` until stopped (in the app's lifespan), ``wake`` from any thread
    (see above). An app whose lifespan runs twice at once (two test clients of one app) runs two rounds, each on
    its own event loop, and a wake reaches both."""

    def __init__(
        self,
        outbox: Outbox,
        tokens: LogoutTokens,
        poster: LogoutPoster,
        *,
        poll_interval: float,
        per_host: int,
        at_once: int,
    ) -> None:
        self.outbox = outbox
        self.tokens = tokens
        self.poster = poster
        self.poll_interval = poll_interval  # seconds between two looks when nothing wakes it
        self.per_host = per_host  # posts to one host at once
        self.at_once = at_once  # posts at once, every host together
        self._running: list[_Worker] = []

    def wake(self) -> None:
        """Look into the outbox now (a revocation on this node wrote logout tokens): callable from any thread."""
        for worker in list(self._running):
            worker.wake()

    async def run(self, stopping: asyncio.Event) -> None:
        """Post due logout tokens until ``stopping``; then wait for the posts under way (each within its deadline)."""
        worker = _Worker(self, asyncio.get_running_loop())
        self._running.append(worker)
        try:
            await worker.run(stopping)
        finally:
            self._running.remove(worker)


class _Worker:
    """One running courier on one event loop: its wake-up, its posts under way and their hosts."""

    def __init__(self, courier: LogoutCourier, loop: asyncio.AbstractEventLoop) -> None:
        self.courier = courier
        self.loop = loop
        self.wakeup = asyncio.Event()
        self.posting: set[asyncio.Task[None]] = set()
        self.hosts: dict[str, int] = {}  # host: posts under way

    def wake(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self.wakeup.set)
        except RuntimeError:  # the loop has closed: the worker stopped
            pass

    async def run(self, stopping: asyncio.Event) -> None:
        stopped = asyncio.ensure_future(stopping.wait())
        try:
            while not stopping.is_set():
                self.wakeup.clear()
                await self._start_due()
                woken = asyncio.ensure_future(self.wakeup.wait())
                await asyncio.wait(
                    {woken, stopped}, timeout=self.courier.poll_interval, return_when=asyncio.FIRST_COMPLETED
                )
                woken.cancel()
        finally:
            stopped.cancel()
            if self.posting:
                await asyncio.gather(*self.posting, return_exceptions=True)

    async def _start_due(self) -> None:
        """Claim due tokens while there is room, each posted by a task of its own."""
        outbox = self.courier.outbox
        while len(self.posting) < self.courier.at_once:
            try:
                claimed = await in_background(outbox.claim)
            except Exception as error:  # the database may be down: the next look tries again
                what, interval = type(error).__name__, self.courier.poll_interval
                logger.warning("posting logout tokens failed (%s); retrying in %s s", what, interval)
                return
            if claimed is None:
                return
            task = asyncio.create_task(self._deliver(claimed))
            self.posting.add(task)
            task.add_done_callback(self._delivered)

    def _delivered(self, task: asyncio.Task[None]) -> None:
        self.posting.discard(task)
        self.wakeup.set()  # room for another: look again

    async def _deliver(self, claimed: Claimed) -> None:
        courier = self.courier
        try:
            logout = await in_background(courier.tokens.prepare, claimed)  # the client's URI now, a token now
        except Undeliverable as error:
            await self._failed(claimed, str(error), for_good=True)
            return
        except Exception as error:  # the database may be down
            await self._failed(claimed, type(error).__name__)
            return
        host = _host(logout.uri)
        if self.hosts.get(host, 0) >= courier.per_host:
            await in_background(courier.outbox.defer, claimed, courier.poster.timeout)  # its turn after one post
            return
        self.hosts[host] = self.hosts.get(host, 0) + 1
        try:
            status = await courier.poster.post(logout)
        except RefusedAddress as error:
            await self._failed(claimed, f"refused: {error}")
        except Exception as error:  # no answer: away, slow, refused connection (the host alone is named)
            await self._failed(claimed, f"{host}: {type(error).__name__}")
        else:
            if status in SUCCESS:
                await in_background(courier.outbox.sent, claimed)
            else:
                await self._failed(claimed, f"{host} answered {status}")
        finally:
            self.hosts[host] -= 1
            if not self.hosts[host]:
                del self.hosts[host]

    async def _failed(self, claimed: Claimed, reason: str, *, for_good: bool = False) -> None:
        """Put the token back for a retry, or give it up; one log line with the host and why, never a token."""
        try:
            status = await in_background(partial(self.courier.outbox.failed, claimed, reason, for_good=for_good))
        except Exception as error:  # the database may be down: the claim's lease runs out and it is tried again
            logger.warning("a logout token could not be marked (%s)", type(error).__name__)
            return
        outcome = "to retry" if status == PENDING else "given up"
        logger.warning("back-channel logout token %s: %s", outcome, reason)


def _host(uri: str) -> str:
    """The URI's scheme, host and port, for messages and the per-host bound (its path or query may carry
    something of the client's)."""
    parts = urlsplit(uri)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"
