"""Token introspection (RFC 7662): client-authenticated, the raw form goes to the domain."""

import flask

from service.identity_web import NO_STORE, json, pairs, provider


def introspect(**_: object) -> flask.Response:
    answer = provider().inspector.introspect(pairs(flask.request.form), flask.request.headers.get("Authorization"))
    return json(answer, headers=NO_STORE)
