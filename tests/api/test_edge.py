"""The edge (service/web/edge.py): one ASGI layer per request, ``send`` wrapped once; and the worker's bound of
accepted work (service/web/admission.py), driven by setting the count in flight, never by timing."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest
from prometheus_client import REGISTRY
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send

from service.app import Dispatcher
from service.web.admission import ARRIVED, Admission
from service.web.contracts import contract
from service.web.edge import Exchange


def metric_value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_menus_request_reaches_connexion_with_send_wrapped_once(app: Dispatcher, api_key: str) -> None:
    """Every concern (observer, CORS, documents, body cap, gate, usage) answers through the one exchange, and the
    exchange sends straight to the server's ``send``."""
    seen: list[Send] = []
    routed = app.menus.app

    async def spy(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(send)
        await routed(scope, receive, send)

    spied = dataclasses.replace(app, menus=dataclasses.replace(app.menus, app=spy))  # the same steps, a spy router
    with TestClient(spied, headers={"Authorization": f"Bearer {api_key}", "Origin": "https://example.com"}) as client:
        response = client.get("/v1/menus/dishes?course=main&limit=3")
    assert response.status_code == 200
    assert response.headers["etag"] and response.headers["x-request-id"] and response.headers["ratelimit-limit"]
    assert "access-control-allow-origin" in response.headers
    (exchange,) = seen
    assert isinstance(exchange, Exchange)
    assert not isinstance(exchange._send, Exchange)  # the server's own send, not another wrapper


def as_the_contract_says(name: str, response_name: str, response: Any) -> dict[str, Any]:
    """``response`` is the contract's ``components/responses/<response_name>`` of ``name``: its media type, every
    header it lists, and the schema's required members."""
    document = contract(name).document
    declared = document["components"]["responses"][response_name]
    media_type = response.headers["content-type"].split(";")[0]
    assert media_type in declared["content"], media_type
    for header in declared.get("headers", {}):
        assert header.lower() in response.headers, header
    schema = declared["content"][media_type]["schema"]
    if "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    if media_type == "text/html":
        return {}
    body: dict[str, Any] = response.json()
    assert set(schema.get("required", ())) <= set(body), body
    return body


@pytest.fixture
def at_the_bound(app: Dispatcher) -> Admission:
    """The worker's admission with ``max_in_flight`` requests in flight already: the next one is refused."""
    assert app.admission is not None
    app.admission.in_flight = app.admission.max_in_flight
    return app.admission


def test_menus_request_past_the_in_flight_bound_is_a_503_problem_with_retry_after_at_once(
    app: Dispatcher, api_key: str, at_the_bound: Admission
) -> None:
    shed = metric_value("regional_menus_shed_requests_total", reason="in_flight")
    with TestClient(app, headers={"Authorization": f"Bearer {api_key}"}) as client:
        refused = client.get("/v1/menus/dishes?course=main")
        health = client.get("/healthz")  # the operations endpoints are not bounded
        at_the_bound.in_flight -= 1  # one answer ends: the next request is taken
        taken = client.get("/v1/menus/dishes?course=main")
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    body = as_the_contract_says("menus.yaml", "ServiceUnavailable", refused)
    assert body["code"] == "service_unavailable" and body["status"] == 503
    assert refused.headers["x-request-id"]
    assert health.status_code == 200 and taken.status_code == 200
    assert at_the_bound.in_flight == at_the_bound.max_in_flight - 1  # the taken request was released
    assert metric_value("regional_menus_shed_requests_total", reason="in_flight") == shed + 1


def test_identity_request_past_the_bound_is_a_503_in_the_operations_own_error_form(
    app: Dispatcher, at_the_bound: Admission
) -> None:
    with TestClient(app) as client:
        token = client.post("/oauth2/token", data={"grant_type": "client_credentials"})
        page = client.get("/sign-in")
    assert token.status_code == 503 and token.headers["retry-after"] == "1"
    body = as_the_contract_says("identity.yaml", "UnavailableJson", token)
    assert body["error"] == "temporarily_unavailable"
    assert page.status_code == 503 and page.headers["retry-after"] == "1"
    as_the_contract_says("identity.yaml", "UnavailablePage", page)


def test_request_that_waited_past_max_queue_wait_is_refused_and_a_fresh_one_taken(
    app: Dispatcher, api_key: str
) -> None:
    assert app.admission is not None
    waited = {"seconds": app.admission.max_queue_wait + 1}

    async def stamped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":  # as service/server/bounded_http.py stamps a head's arrival
            scope[ARRIVED] = time.monotonic() - waited["seconds"]
        await app(scope, receive, send)

    with TestClient(stamped, headers={"Authorization": f"Bearer {api_key}"}) as client:
        late = client.get("/v1/menus/regions")
        waited["seconds"] = 0
        fresh = client.get("/v1/menus/regions")
    assert late.status_code == 503 and late.headers["retry-after"] == "1"
    assert fresh.status_code == 200
