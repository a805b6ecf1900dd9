"""The service's Prometheus metrics, counted in every worker and summed when scraped.

Requests are counted once, at the dispatcher, by method, route template and status, with their
latency; the identity events (tokens issued, sign-ins, failed sign-ins and every other security
event) are counted from the audit events (``identity.common.audit``), so a count and its audit line can
never disagree. Labels take only bounded values: templates, not paths; known methods, else ``other``.

One process keeps its metrics in memory. Under ``serve --workers N`` each worker is a process of its
own, and prometheus_client's multiprocess mode keeps each one's values in files under
``PROMETHEUS_MULTIPROC_DIR`` (see ``service.ops.multiprocess``); a scrape, answered by whichever worker
gets it, sums the files of all of them, those of exited workers included, so no count is lost.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest, multiprocess
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from identity.common import audit

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4  # the text format every Prometheus server reads
# Seconds: from a cached menus read (about a millisecond) to a slow database (seconds).
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})  # any other is "other"

REQUESTS = Counter(
    "regional_menus_http_requests",
    "HTTP requests answered, by method, route template and status.",
    ["method", "route", "status"],
)
LATENCY = Histogram(
    "regional_menus_http_request_duration_seconds",
    "Time from receiving a request to sending the end of its answer, by method and route template.",
    ["method", "route"],
    buckets=LATENCY_BUCKETS,
)
RATE_LIMITED = Counter(
    "regional_menus_rate_limited_requests",
    "Requests refused with 429: a menus API key over its rate, or sign-in throttling.",
    ["route"],
)
SHED = Counter(
    "regional_menus_shed_requests",
    "Requests refused with 503 at once because the worker was at its bound (service/web/admission.py), by reason: "
    "in_flight (max_in_flight answered at once) or waited (queued past max_queue_wait).",
    ["reason"],
)
TOKENS_ISSUED = Counter(
    "regional_menus_tokens_issued",
    "Successful token endpoint exchanges, by grant type.",
    ["grant_type"],
)
SIGN_INS = Counter("regional_menus_sign_ins", "Successful sign-ins with an email and password.")
SIGN_IN_FAILURES = Counter(
    "regional_menus_sign_in_failures",
    "Failed sign-ins, by reason: unknown_account, wrong_password, throttled, disabled or credential_changed.",
    ["reason"],
)
SECURITY_EVENTS = Counter(
    "regional_menus_security_events",
    "Every audited security event, by event and outcome (the audit log has the details).",
    ["event", "outcome"],
)


def method_label(method: str) -> str:
    return method if method in METHODS else "other"


_RequestSeries = tuple[Counter, Histogram, Counter | None]
_series: dict[tuple[str, str, int], _RequestSeries] = {}  # bounded: templates x methods x statuses


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    """Count one answered request. The labelled children are looked up once per (method, route, status):
    this runs on every request, the menus hot path included."""
    method = method_label(method)  # before the lookup: a client's made-up methods must not grow the cache
    series = _series.get((method, route, status))
    if series is None:
        series = _series[(method, route, status)] = (
            REQUESTS.labels(method, route, str(status)),
            LATENCY.labels(method, route),
            RATE_LIMITED.labels(route) if status == 429 else None,
        )
    requests, latency, rate_limited = series
    requests.inc()
    latency.observe(seconds)
    if rate_limited is not None:
        rate_limited.inc()


def count_shed(reason: str) -> None:
    """One request refused by the worker's admission, ``reason`` being ``in_flight`` or ``waited``."""
    SHED.labels(reason).inc()


def count_security_event(event: str, outcome: str, fields: Mapping[str, object]) -> None:
    """The audit listener: every security event, and the named counters the dashboards start from."""
    SECURITY_EVENTS.labels(event, outcome).inc()
    if event == audit.TOKEN_ISSUED:
        TOKENS_ISSUED.labels(str(fields.get("grant_type", "unknown"))).inc()
    elif event == audit.SIGN_IN and outcome == audit.SUCCESS:
        SIGN_INS.inc()
    elif event == audit.SIGN_IN:
        SIGN_IN_FAILURES.labels(str(fields.get("reason", "unknown"))).inc()


def exposition() -> bytes:
    """The text format of every metric: this process's, or with several workers the sum of all of theirs."""
    if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        return generate_latest(REGISTRY)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return generate_latest(registry)
