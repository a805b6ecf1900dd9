"""The edge (service/web/edge.py): one ASGI layer per request, ``send`` wrapped once."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send

from service.app import Dispatcher
from service.web.edge import Exchange


def test_menus_request_reaches_connexion_with_send_wrapped_once(
    app: Dispatcher, api_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every concern (observer, CORS, documents, body cap, gate, usage) answers through the one exchange, and the
    exchange sends straight to the server's ``send``."""
    seen: list[Send] = []
    routed = app.menus.app

    async def spy(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(send)
        await routed(scope, receive, send)

    monkeypatch.setattr(app.menus, "app", spy)
    with TestClient(app, headers={"Authorization": f"Bearer {api_key}", "Origin": "https://example.com"}) as client:
        response = client.get("/v1/menus/dishes?course=main&limit=3")
    assert response.status_code == 200
    assert response.headers["etag"] and response.headers["x-request-id"] and response.headers["ratelimit-limit"]
    assert "access-control-allow-origin" in response.headers
    (exchange,) = seen
    assert isinstance(exchange, Exchange)
    assert not isinstance(exchange._send, Exchange)  # the server's own send, not another wrapper
