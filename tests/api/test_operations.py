"""The operations endpoints (openapi/operations.yaml, docs/operations.md): liveness, readiness, metrics, and
their contract."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
import sqlalchemy as sa
from openapi_spec_validator import validate
from starlette.testclient import TestClient

from data.catalog import Catalog
from data.yaml_text import safe_load
from service.ops.operations_app import PATHS
from service.settings import Settings
from service.web.contracts import spec_path
from tests.support.apps import make_app
from tests.support.database_faults import outage, statements_fail
from tests.support.loops import each


def test_healthz_answers_ok_without_credentials(anonymous: TestClient) -> None:
    response = anonymous.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_answers_ready_when_the_database_answers(anonymous: TestClient) -> None:
    response = anonymous.get("/readyz")
    assert response.status_code == 200 and response.json()["status"] == "ready"


def test_readyz_is_503_problem_when_the_database_cannot_be_reached(app: Any, anonymous: TestClient) -> None:
    with statements_fail(app.engine, outage()):
        response = anonymous.get("/readyz")
    assert response.status_code == 503 and response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "service_unavailable" and int(response.headers["retry-after"]) >= 1
    assert anonymous.get("/healthz").status_code == 200  # alive, only not ready


@pytest.mark.parametrize("issuer", ["", "/tenant-a"])
def test_the_site_icon_is_served_at_the_origins_root_whatever_the_issuers_path(
    settings: Settings, engine: sa.Engine, catalog: Catalog, issuer: str
) -> None:
    """Browsers ask every origin for /favicon.ico: it is an icon, not the identity API's 404 (at the root) nor the
    dispatcher's (an issuer with a path)."""
    app = make_app(settings.with_changes(issuer=f"http://127.0.0.1:8000{issuer}"), catalog=catalog)
    with TestClient(app) as client:
        response = client.get("/favicon.ico")
    assert response.status_code == 200 and response.headers["content-type"] == "image/x-icon"
    assert response.content[:4] == b"\x00\x00\x01\x00"  # an ICO file's header: a reserved zero, type 1 (icon)
    assert response.headers["cache-control"] == "public, max-age=86400"


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


@pytest.fixture(scope="module")
def operations_document() -> dict:
    return safe_load(spec_path("operations.yaml").read_text(encoding="utf-8"))


def test_operations_document_is_valid_openapi_3_0(operations_document: dict) -> None:
    validate(operations_document)
    assert operations_document["openapi"] == "3.0.3"


def test_every_operations_endpoint_documents_400_405_and_500_and_resolves_to_a_handler(
    operations_document: dict,
) -> None:
    for path, item in each(operations_document["paths"].items()):
        for method, operation in each(item.items()):
            assert {"200", "400", "405", "500"} <= set(operation["responses"]), (method, path)
            module, _, name = operation["operationId"].rpartition(".")
            assert callable(getattr(importlib.import_module(module), name)), operation["operationId"]


def test_every_documented_operations_path_is_routed_to_the_operations_app(operations_document: dict) -> None:
    assert set(operations_document["paths"]) == PATHS


def test_served_operations_document_is_the_written_one(anonymous: TestClient, operations_document: dict) -> None:
    served = anonymous.get("/ops/openapi.json").json()
    assert served["paths"].keys() == operations_document["paths"].keys()
    assert served["paths"]["/metrics"]["get"]["operationId"] == "handlers.operations.metrics"
