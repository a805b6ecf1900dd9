"""CORS preflights of the token, revocation and userinfo endpoints.

A preflight (``Origin`` and ``Access-Control-Request-Method``) is answered before it reaches here, by
``service/identity_api/client_cors.py``; an ``OPTIONS`` that is not one reaches these handlers, which
answer what the path allows (RFC 9110 §9.3.7).
"""

from starlette.responses import Response


def _allow(methods: str) -> Response:
    return Response(status_code=204, headers={"Allow": methods})


async def token_preflight() -> Response:
    return _allow("OPTIONS, POST")


async def revocation_preflight() -> Response:
    return _allow("OPTIONS, POST")


async def userinfo_preflight() -> Response:
    return _allow("GET, HEAD, OPTIONS, POST")
