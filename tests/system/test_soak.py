"""The soak (``tests/support/soak.py``), with its limits: deselected by default (``-m "not soak"`` in pyproject), run by
``tox -e soak`` or ``pytest -m soak``; SOAK_SECONDS (default 180) bounds it."""

from __future__ import annotations

import pytest

from tests.support.soak import from_environment

MEMORY_GROWTH_LIMIT = 10.0  # percent of the resident memory after warm-up


@pytest.mark.soak
def test_soak_serves_mixed_traffic_without_errors_or_memory_growth() -> None:
    """Minutes of every kind of request: no 5xx, no failed request, resident memory grows less than 10 %."""
    result = from_environment()
    assert result["requests"] > 0
    assert result["server_errors_5xx"] == 0, result["statuses"]
    assert result["errors"] == 0, result["error_samples"]
    assert result["rss_growth_percent"] < MEMORY_GROWTH_LIMIT, result
