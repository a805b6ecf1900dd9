"""The authorization request (GET and form POST): every parameter is read raw, repeats included."""

import flask

from service.identity_web import browser, outcome, pairs, provider


def start(**_: object) -> flask.Response:
    identity = provider()
    return outcome(identity.flow.start(pairs(flask.request.args), browser()), identity.issuer)


def start_post(**_: object) -> flask.Response:
    identity = provider()
    return outcome(identity.flow.start(pairs(flask.request.form), browser()), identity.issuer)
