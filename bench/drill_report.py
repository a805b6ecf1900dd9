"""What the drill reports (bench/drill.py): each phase summarised, the limit checked, the table."""

from __future__ import annotations

import base64
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bench.drill_load import Issued, Load, Sample
from bench.drill_plan import Plan


@dataclass
class Phase:
    """One phase of the drill: its name, when it started, when its fault began and ended, and what it saw."""

    name: str
    started: float
    fault_started: float = 0.0
    fault_ended: float = 0.0
    ended: float = 0.0
    note: str = ""
    readiness: dict[str, Counter[str]] = field(default_factory=dict)


def claims_of(token: str) -> dict[str, Any]:
    """What a lost token says of itself (its payload, unverified): which token, issued when, for whom."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return {}
    return {name: claims.get(name) for name in ("jti", "iat", "client_id", "sub")}


def token_records(database_url: str, jtis: list[Any]) -> dict[str, Any]:
    """The access token rows of ``jtis`` (the lost tokens'), as the database holds them: why they are inactive."""
    import sqlalchemy as sa

    if not jtis:
        return {}
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sa.text(
                    "SELECT jti, issued_at, expires_at, revoked_at, grant_id FROM access_tokens WHERE jti IN :jtis"
                ).bindparams(sa.bindparam("jtis", expanding=True)),
                {"jtis": [str(j) for j in jtis]},
            ).all()
    finally:
        engine.dispose()
    return {row.jti: {name: str(value) for name, value in row._mapping.items()} for row in rows}


def since_start(moment: Any, wall_started: float) -> float:
    """A database timestamp (UTC, naive or aware) as seconds since the drill's start."""
    import datetime

    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return float(moment.timestamp() - wall_started)


def outbox_id(message: Any) -> str:
    """The outbox id a mail's Message-ID carries (service/mail/letters.py: make_msgid(idstring=the id))."""
    local = str(message.get("Message-ID", "")).strip("<>").split("@")[0]
    return local.rsplit(".", 1)[-1].replace("-", "_")


def percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def summarise(phase: Phase, load: Load, plan: Plan, inactive: list[Issued]) -> dict[str, Any]:
    # A request belongs to the phase in which its answer (or error) came: one in flight when a fault starts is
    # the fault's.
    mine = [s for s in load.samples if phase.started <= s.at + s.seconds < phase.ended]
    samples = [s for s in mine if s.kind != "probe"]
    probes = [s for s in mine if s.kind == "probe"]
    errors = [s for s in samples + probes if s.outcome != "ok"]
    seconds = [s.seconds * 1000 for s in samples]
    dishes = [s.seconds * 1000 for s in samples if s.kind == "dishes"]
    issued = [i for i in load.issued if phase.started <= i.at < phase.ended]
    lost = [i for i in inactive if phase.started <= i.at < phase.ended]
    sign_ins = [ok for at, ok in load.sign_ins if phase.started <= at < phase.ended]
    # Seconds from the fault's end until the errors stop: the end of the last second with errors at or over 0.1 %.
    by_second: dict[int, list[Sample]] = {}
    for sample in samples + probes:
        by_second.setdefault(int(sample.at + sample.seconds), []).append(sample)
    bad = [
        second for second, group in by_second.items()
        if sum(s.outcome != "ok" for s in group) / len(group) >= 0.001 and second + 1 > phase.fault_ended
    ]  # fmt: skip
    recovered = max(0.0, max(bad) + 1 - phase.fault_ended) if bad else 0.0
    return {
        "phase": phase.name,
        "note": phase.note,
        "seconds": round(phase.ended - phase.started, 1),
        "fault_seconds": round(phase.fault_ended - phase.fault_started, 1),
        "requests": len(samples) + len(probes),
        "requests_per_second": round((len(samples) + len(probes)) / max(0.001, phase.ended - phase.started), 1),
        "errors": len(errors),
        "error_rate": round(len(errors) / max(1, len(samples) + len(probes)), 5),
        "errors_by_kind": dict(Counter(f"{s.kind}:{s.outcome}" for s in errors)),
        "idempotent_errors": sum(1 for s in errors if s.idempotent),
        "p50_ms": round(percentile(seconds, 0.50), 1),
        "p99_ms": round(percentile(seconds, 0.99), 1),
        "dishes_p50_ms": round(percentile(dishes, 0.50), 1),
        "dishes_p99_ms": round(percentile(dishes, 0.99), 1),
        "seconds_to_recover": round(recovered, 1),
        "tokens_issued": len(issued),
        "tokens_active": len(issued) - len(lost),
        "sign_ins": {"started": len(sign_ins), "completed": sum(sign_ins)},
        "readiness": {name: dict(counts) for name, counts in phase.readiness.items()},
        "rate_limit": probe_check(phase, load, plan),
    }


def probe_check(phase: Phase, load: Load, plan: Plan) -> dict[str, Any]:
    """The probe key's admissions against the limit's documented approximation (docs/nodes.md): while Redis is up,
    never more than twice the limit in any 60 s, and never past the limit within one counting minute; while it
    is away, answered without a limit (200, RateLimit-Remaining equal to the limit), not refused or failed. Redis
    comes back empty, so its counting starts afresh: the windows are checked on each side of the outage."""
    probes = [p for p in load.probe if phase.started <= p[0] < phase.ended]
    outage = (phase.fault_started, phase.fault_ended) if phase.name == "redis_stop" else None
    segments: list[list[tuple[float, int, int | None]]] = [[]]
    during: list[tuple[float, int, int | None]] = []
    for probe in probes:
        if outage and outage[0] <= probe[0] < outage[1]:
            during.append(probe)
            if segments[-1]:
                segments.append([])
        else:
            segments[-1].append(probe)
    most = 0
    for segment in segments:
        admitted = [at for at, status, _ in segment if status == 200]
        start = 0
        for end, at in enumerate(admitted):
            while admitted[start] < at - 60:
                start += 1
            most = max(most, end - start + 1)
    answered = sum(1 for _, status, _ in during if status == 200)
    open_answers = sum(1 for _, status, remaining in during if status == 200 and remaining == plan.rate_limit)
    # A 503 (the database away: the key cannot be checked) is an error of its own, counted as such, not the limit's.
    within = most <= 2 * plan.rate_limit and all(status in (200, 429) for _, status, _ in during)
    return {
        "probe_sent": len(probes),
        "admitted": sum(1 for _, status, _ in probes if status == 200),
        "refused_429": sum(1 for _, status, _ in probes if status == 429),
        "most_admitted_in_60s": most,
        "limit": plan.rate_limit,
        "during_outage": {"sent": len(during), "answered": answered, "answered_open": open_answers} if outage else None,
        "within_documented_approximation": within,
    }


def table(results: dict[str, Any]) -> str:
    """The per-phase table docs/operations.md shows ("What survives what")."""
    lines = [
        "| phase | requests (req/s) | errors by kind as clients saw them | error rate | p50 / p99 ms (dishes) "
        "| s to < 0.1 % "
        "| tokens issued / active | mails queued / delivered | sign-ins done / started | readiness seen (per node) "
        "| rate limit |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in results["phases"]:
        errors = ", ".join(f"{kind} {count}" for kind, count in sorted(p["errors_by_kind"].items())) or "none"
        readiness = (
            "; ".join(
                f"{node}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                for node, counts in sorted(p["readiness"].items())
            )
            or "–"
        )
        limit = p["rate_limit"]
        held = "held" if limit["within_documented_approximation"] else "**broken**"
        limit_text = f"{held}: {limit['most_admitted_in_60s']} admitted in 60 s at most (limit {limit['limit']})"
        if limit["during_outage"]:
            outage = limit["during_outage"]
            limit_text += (
                f"; Redis away: {outage['answered']} of {outage['sent']} answered, {outage['answered_open']} "
                "without a limit, the rest from permits already held"
            )
        lines.append(
            f"| {p['phase']} | {p['requests']} ({p['requests_per_second']:.0f}) | {errors} | "
            f"{p['error_rate'] * 100:.2f} % | {p['p50_ms']} / {p['p99_ms']} "
            f"({p['dishes_p50_ms']} / {p['dishes_p99_ms']}) | "
            f"{p['seconds_to_recover']} | "
            f"{p['tokens_issued']} / {p['tokens_active']} | {p['mails']['queued']} / {p['mails']['delivered']} | "
            f"{p['sign_ins']['completed']} / {p['sign_ins']['started']} "
            f"| {readiness} | {limit_text} |"
        )
    whole, mail, tokens = results["whole"], results["mail"], results["tokens"]
    lines += [
        "",
        f"Whole drill: {whole['requests']} requests ({whole['requests_per_second']:.0f} a second), {whole['errors']} "
        f"errors ({whole['error_rate'] * 100:.2f} %); tokens issued {tokens['issued']}, introspected active "
        f"{tokens['active']}, lost {tokens['lost']}; mails queued {mail['queued']}, delivered {mail['delivered']}, "
        f"pending {mail['pending']}, failed {mail['failed']}, delivered twice {mail['delivered_twice']}, lost "
        f"{mail['lost']}; sign-ins completed {whole['sign_ins']['completed']} of {whole['sign_ins']['started']}.",
    ]
    return "\n".join(lines)
