"""Handlers of ``openapi/operations.yaml``: liveness, readiness and metrics for operators and orchestrators, and the
site's icon for browsers."""

from connexion.context import scope
from starlette.responses import Response

from service.ops import metrics as counted
from service.ops.favicon import ICON_CACHE_CONTROL, icon
from service.ops.health import READINESS

_OK = b'{"status":"ok"}'


async def healthz() -> Response:
    return Response(_OK, media_type="application/json")


async def readyz() -> Response:
    answer = await READINESS.get(scope).answer()  # raises the 503 problem when the database cannot be reached
    return Response(answer, media_type="application/json")


async def metrics() -> Response:
    """Prometheus text format 0.0.4; with several workers, the sum of theirs (files read, no database)."""
    return Response(counted.exposition(), headers={"Content-Type": counted.CONTENT_TYPE})


async def favicon() -> Response:
    return Response(icon(), media_type="image/x-icon", headers={"Cache-Control": ICON_CACHE_CONTROL})
