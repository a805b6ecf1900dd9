"""UserInfo (OpenID Connect Core §5.3): the token is read from the Authorization header only."""

import flask

from service.identity_web import json, provider


def get_userinfo(**_: object) -> flask.Response:
    claims = provider().userinfo.claims(flask.request.headers.get("Authorization"))
    return json(claims, headers={"Cache-Control": "no-store"})


def post_userinfo(**_: object) -> flask.Response:
    return get_userinfo()
