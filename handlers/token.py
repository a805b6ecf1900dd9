"""The token endpoint: the raw form (repeats included) and the Authorization header go to the domain."""

import flask

from service.identity_web import NO_STORE, json, pairs, provider


def exchange(**_: object) -> flask.Response:
    tokens = provider().token_endpoint.exchange(pairs(flask.request.form), flask.request.headers.get("Authorization"))
    return json(tokens, headers=NO_STORE)
