"""``python -m bench.request_cost`` (the CPU time of an identity request in process, docs/performance.md) still
drives the real app and finds each layer it reports: a handful of requests, no timing asserted."""

from __future__ import annotations

import pytest

from bench import request_cost


@pytest.mark.parametrize("endpoint", ["introspect", "token"])
def test_request_cost_answers_every_request_and_profiles_each_layer(endpoint: str) -> None:
    lines: list[str] = []
    arguments = ["--endpoint", endpoint, "--requests", "8", "--rounds", "1", "--together", "4", "--profile"]
    request_cost.main([*arguments, "--top", "3"], out=lines.append)
    text = "\n".join(lines)
    assert "event loop CPU" in text and "process CPU" in text
    assert "request validation operation (ours)" in text and f"handler: {endpoint}" in text


def test_request_cost_measures_the_jwks_answered_at_the_edge() -> None:
    lines: list[str] = []
    request_cost.main(["--endpoint", "jwks", "--requests", "8", "--rounds", "1", "--profile"], out=lines.append)
    text = "\n".join(lines)
    assert text.startswith("GET /jwks:")  # every answer was 200 (else it exits)
    assert "edge (observer, admission, steps)" in text
    assert "ConnexionMiddleware" not in text  # answered from memory, before the identity API's app
