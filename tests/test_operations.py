"""The operations endpoints (DESIGN §6): liveness, readiness, and their contract."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from service.openapi import spec_path


def test_healthz_answers_ok_without_credentials(anonymous: TestClient) -> None:
    response = anonymous.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_answers_ready_when_the_database_answers(anonymous: TestClient) -> None:
    response = anonymous.get("/readyz")
    assert response.status_code == 200 and response.json() == {"status": "ready"}


def test_readyz_is_503_problem_when_the_database_cannot_be_reached(
    anonymous: TestClient, engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise sa.exc.OperationalError("SELECT 1", {}, ConnectionRefusedError("connection refused"))

    monkeypatch.setattr(sa.engine.Engine, "connect", refuse)
    response = anonymous.get("/readyz")
    assert response.status_code == 503 and response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "service_unavailable" and int(response.headers["retry-after"]) >= 1
    assert anonymous.get("/healthz").status_code == 200  # alive, only not ready


def test_operations_endpoints_refuse_unknown_parameters(anonymous: TestClient) -> None:
    response = anonymous.get("/readyz", params={"verbose": "1"})
    assert response.status_code == 400 and response.json()["code"] == "invalid_parameter"


def test_operations_endpoints_allow_only_get(anonymous: TestClient) -> None:
    response = anonymous.post("/healthz")
    assert response.status_code == 405 and response.headers["allow"] == "GET, HEAD"


def test_operations_document_is_served_apart_from_the_apis(anonymous: TestClient) -> None:
    document = anonymous.get("/ops/openapi.json").json()
    assert set(document["paths"]) >= {"/healthz", "/readyz"}
    assert anonymous.get("/ops/ui/").status_code == 200
    assert spec_path("operations.yaml").exists()
