"""RP-initiated sign-out (GET with a query, POST with a form)."""

import flask

from service.identity_web import browser, outcome, pairs, provider


def end_session(**_: object) -> flask.Response:
    identity = provider()
    return outcome(identity.end_session.handle(pairs(flask.request.args), browser(), posted=False), identity.issuer)


def end_session_post(**_: object) -> flask.Response:
    identity = provider()
    return outcome(identity.end_session.handle(pairs(flask.request.form), browser(), posted=True), identity.issuer)
