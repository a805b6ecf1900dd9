"""The requests we make to an organization's identity provider, as its relying party (identity/federation/): the
``UpstreamHttp`` port, with httpx.

They run in the worker thread of the page that needs them (the callback of a federated sign-in, the console's
connection form), synchronously, under the same bounds as the back-channel logout posts (``backchannel.py``): the
URI's host is resolved and every address checked against the outbound rule (identity/outbound_uris.py: no private,
link-local or metadata address; loopback only where the node allows it), and the request goes to the checked
address itself, with the host in ``Host`` and in TLS's server name, so the name is never resolved again (DNS
rebinding). No redirect is followed (a 3xx is handed back as an answer, which the domain refuses), no proxy from
the environment, one deadline for the whole exchange (each read is bounded by what is left of it), and an answer
larger than ``MAX_ANSWER`` bytes is cut and refused.
"""

from __future__ import annotations

import base64
import ssl
import time
from collections.abc import Callable, Mapping
from urllib.parse import quote

import httpx

from identity.common.outbound_uris import Address, OutboundRule, RefusedAddress
from identity.federation.errors import UpstreamUnavailable
from identity.federation.upstream_http import MAX_ANSWER, Answer
from service.outbound.addresses import addresses_of, destination_of

Resolve = Callable[[str, int], list[Address]]
USER_AGENT = "regional-menus-federation"


class UpstreamRequests:
    """``UpstreamHttp`` over httpx, within the node's outbound rule (see above)."""

    def __init__(
        self,
        *,
        timeout: float,
        loopback: bool = False,
        resolver: Resolve = addresses_of,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.timeout = timeout  # seconds for the whole exchange
        self.rule = OutboundRule(loopback=loopback)
        self._resolve = resolver
        self._transport = transport  # tests may give one
        self._tls: ssl.SSLContext | None = None

    def get(self, url: str, *, bearer: str | None = None) -> Answer:
        headers = {"Accept": "application/json"}
        if bearer is not None:
            headers["Authorization"] = f"Bearer {bearer}"
        return self._send("GET", url, headers, None)

    def post_form(self, url: str, form: Mapping[str, str], *, basic: tuple[str, str] | None = None) -> Answer:
        headers = {"Accept": "application/json"}
        if basic is not None:  # RFC 6749 §2.3.1: each part form-encoded, then Basic
            user, password = (quote(part, safe="") for part in basic)
            headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        return self._send("POST", url, headers, dict(form))

    def _send(self, method: str, url: str, headers: dict[str, str], form: dict[str, str] | None) -> Answer:
        destination = destination_of(url)
        host = destination.host
        deadline = time.monotonic() + self.timeout
        try:
            address = self.rule.check_resolved(host, self._resolve(host, destination.port))
        except RefusedAddress as error:
            raise UpstreamUnavailable(
                "Your organization's provider is at an address this service may not reach.", detail=str(error)
            ) from None
        except OSError as error:
            raise UpstreamUnavailable(
                "Your organization's provider could not be found.", detail=f"{host}: {type(error).__name__}"
            ) from None
        if self._tls is None:
            self._tls = httpx.create_ssl_context()
        target = httpx.URL(url).copy_with(host=str(address))
        request_headers = {**headers, "Host": destination.host_header, "User-Agent": USER_AGENT}
        try:
            with (
                httpx.Client(
                    verify=self._tls,
                    timeout=self.timeout,
                    follow_redirects=False,
                    trust_env=False,
                    transport=self._transport,
                ) as http,
                http.stream(
                    method, target, headers=request_headers, data=form, extensions={"sni_hostname": host}
                ) as answer,
            ):
                body = bytearray()
                for chunk in answer.iter_bytes():
                    body += chunk
                    if len(body) > MAX_ANSWER:
                        raise UpstreamUnavailable(
                            "Your organization's provider sent an answer larger than this service takes.",
                            detail=f"{host}: over {MAX_ANSWER} bytes",
                        )
                    if time.monotonic() > deadline:
                        raise httpx.ReadTimeout("the exchange's deadline passed")
                media_type = answer.headers.get("content-type", "").split(";", 1)[0].strip().lower()
                return Answer(answer.status_code, media_type, bytes(body))
        except httpx.HTTPError as error:
            raise UpstreamUnavailable(
                "Your organization's provider did not answer.", detail=f"{host}: {type(error).__name__}"
            ) from None
