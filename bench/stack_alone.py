"""The stack the service is built on, alone: stock Connexion 3.3 (``AsyncApp``, its defaults untouched) with a
one-operation document, ``GET /jwks`` answering an empty key set, served by uvicorn as the service is served, with
SQLAlchemy imported (the service's store). ``python -m bench --only startup`` starts it beside the service: what
starting costs before any code of ours runs, on the machine at hand. Importing Connexion imports Starlette, its
test client with httpx, requests, Jinja2 and Werkzeug with it.
"""

from __future__ import annotations

from typing import Any

import connexion
import sqlalchemy  # noqa: F401  # imported by every process of the service

DOCUMENT = {
    "openapi": "3.0.3",
    "info": {"title": "The stack alone", "version": "1"},
    "paths": {
        "/jwks": {
            "get": {
                "operationId": "bench.stack_alone.keys",
                "responses": {"200": {"description": "An empty key set"}},
            }
        }
    },
}


async def keys() -> dict[str, Any]:
    return {"keys": []}


def app() -> connexion.AsyncApp:
    stack = connexion.AsyncApp(__name__)
    stack.add_api(DOCUMENT)
    return stack
