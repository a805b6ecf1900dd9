"""Discovery and JWKS: computed from the issuer and the signing keys."""

import flask

from service.identity_web import PUBLIC_CACHE, json, provider


def discovery() -> flask.Response:
    return json(provider().discovery(), headers=PUBLIC_CACHE)


def jwks() -> flask.Response:
    return json(provider().jwks(), headers=PUBLIC_CACHE)
