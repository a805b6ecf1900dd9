"""Token revocation (RFC 7009): 200 with an empty body whether or not there was anything to revoke."""

import flask

from service.identity_web import NO_STORE, pairs, provider


def revoke(**_: object) -> flask.Response:
    provider().inspector.revoke(pairs(flask.request.form), flask.request.headers.get("Authorization"))
    response = flask.Response(status=200, headers=NO_STORE)
    del response.headers["Content-Type"]  # the body is empty; it has no media type
    return response
