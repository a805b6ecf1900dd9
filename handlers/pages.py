"""The sign-in pages: each GET shows its form, each POST acts on it and says where to go next."""

import flask

from service.identity_web import browser, outcome, pairs, provider


def _show(name: str) -> flask.Response:
    identity = provider()
    show = getattr(identity.flow, f"{name}_form")
    return outcome(show(flask.request.args.get("interaction"), browser()), identity.issuer)


def _act(name: str) -> flask.Response:
    identity = provider()
    act = getattr(identity.flow, name)
    return outcome(act(pairs(flask.request.form), browser()), identity.issuer)


def sign_in_form(**_: object) -> flask.Response:
    return _show("sign_in")


def sign_in(**_: object) -> flask.Response:
    return _act("sign_in")


def sign_up_form(**_: object) -> flask.Response:
    return _show("sign_up")


def sign_up(**_: object) -> flask.Response:
    return _act("sign_up")


def select_organization_form(**_: object) -> flask.Response:
    return _show("select_organization")


def select_organization(**_: object) -> flask.Response:
    return _act("select_organization")


def consent_form(**_: object) -> flask.Response:
    return _show("consent")


def consent(**_: object) -> flask.Response:
    return _act("consent")
