"""The short drill (``python -m bench drill --short``, bench/drill.py): nginx in front of three nodes of two workers
on one PostgreSQL, Redis and an SMTP server, under a mixed load, each fault once for a second or two.

The drill reports figures (error rates, latencies, recovery times) and this test asserts none of them; it checks
what must hold whatever the machine's speed: every phase ran under load; nothing a client was given is lost (every
token introspects active, every mail queued is delivered or still pending, none delivered twice); a node's kill
costs no idempotent request an error (nginx retries it on another node); readiness says what a node can do (503
on every node while PostgreSQL is away, "degraded" while Redis is); the rate limit stays within its documented
approximation in every phase.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from bench.drill_plan import FAULTS
from bench.drill_report import table
from tests.support.live import ROOT


@pytest.fixture(scope="module")
def drill(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``python -m bench drill --short`` as a process of its own (its threads, servers and commands stay there)."""
    out = tmp_path_factory.mktemp("drill")
    done = subprocess.run(
        [sys.executable, "-m", "bench", "drill", "--short", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    results: dict[str, Any] = json.loads((out / "drill-short.json").read_text(encoding="utf-8"))
    print("\n" + table(results))
    return results


def phase(results: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in results["phases"] if p["phase"] == name)


def test_every_phase_ran_under_load(drill: dict[str, Any]) -> None:
    assert [p["phase"] for p in drill["phases"]] == ["baseline", *FAULTS]
    assert all(p["requests"] > 0 for p in drill["phases"])
    assert drill["whole"]["sign_ins"]["completed"] > 0


def test_no_token_a_client_was_given_is_lost(drill: dict[str, Any]) -> None:
    tokens = drill["tokens"]
    assert tokens["issued"] > 0
    assert tokens["lost"] == 0, [(p["phase"], p["tokens_issued"], p["tokens_active"]) for p in drill["phases"]]


def test_no_mail_is_lost_or_delivered_twice(drill: dict[str, Any]) -> None:
    mail = drill["mail"]
    assert mail["queued"] > 0
    assert mail["lost"] == 0 and mail["failed"] == 0, mail
    assert mail["delivered_twice"] == 0, mail
    assert mail["delivered"] + mail["pending"] == mail["queued"], mail  # pending: waiting out a retry after the outage


def test_a_killed_node_costs_no_idempotent_request_an_error(drill: dict[str, Any]) -> None:
    killed = phase(drill, "node_kill")
    assert killed["idempotent_errors"] == 0, killed["errors_by_kind"]
    assert "down" in killed["readiness"]["b"]  # it was down, and requests went elsewhere


def test_readiness_says_what_each_node_can_do_in_each_fault(drill: dict[str, Any]) -> None:
    database = phase(drill, "postgres_restart")["readiness"]
    assert all("503" in database[node] for node in "abc"), database
    redis = phase(drill, "redis_stop")["readiness"]
    assert all("degraded" in redis[node] and "503" not in redis[node] for node in "abc"), redis
    smtp = phase(drill, "smtp_stop")["readiness"]
    assert all("ready" in smtp[node] and not {"503", "down"} & set(smtp[node]) for node in "abc"), smtp  # mail waits


def test_the_rate_limit_stays_within_its_documented_approximation(drill: dict[str, Any]) -> None:
    for each in drill["phases"]:
        assert each["rate_limit"]["within_documented_approximation"], (each["phase"], each["rate_limit"])
    outage = phase(drill, "redis_stop")["rate_limit"]["during_outage"]
    assert outage["sent"] > 0 and outage["answered"] == outage["sent"]  # answered, none refused or failed
