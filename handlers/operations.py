"""Handlers of ``openapi/operations.yaml``: liveness and readiness for operators and orchestrators."""

from connexion.context import scope
from starlette.responses import Response

from service.health import Readiness

_OK = b'{"status":"ok"}'
_READY = b'{"status":"ready"}'


async def healthz() -> Response:
    return Response(_OK, media_type="application/json")


async def readyz() -> Response:
    readiness: Readiness = scope["state"]["readiness"]
    await readiness.check()  # raises the 503 problem when the database cannot be reached
    return Response(_READY, media_type="application/json")
