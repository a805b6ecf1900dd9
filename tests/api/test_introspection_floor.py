"""``python -m bench.introspection_floor``'s two framework sides still answer what the peer is asked: stock
Connexion over the served identity contract, and a bare Starlette route (no timing asserted)."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from bench import introspection_floor


@pytest.mark.parametrize("app", [introspection_floor.connexion_as_shipped, introspection_floor.starlette_route])
def test_each_framework_side_answers_an_introspection_form_with_the_constant(app: Any) -> None:
    with TestClient(app()) as client:
        answer = client.post("/oauth2/introspect", data={"token": "any"}, auth=("bench-peer", "secret"))
    assert answer.status_code == 200 and answer.json() == introspection_floor.ANSWER
    assert answer.headers["cache-control"] == "no-store"


def test_stock_connexion_still_validates_the_form_by_the_contract() -> None:
    with TestClient(introspection_floor.connexion_as_shipped()) as client:
        assert client.post("/oauth2/introspect", data={"nothing": "x"}).status_code == 400  # token is required
