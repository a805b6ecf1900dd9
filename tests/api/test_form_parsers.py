"""The token and introspection forms read by the contract's form rules (service/web/fast_forms.py) are answered
exactly as when Connexion's own parser reads every form: Schemathesis-generated bodies, valid and invalid
(its positive and negative modes over openapi/identity.yaml), and raw bodies of the characters a form parser
treats specially, are sent to an app with the fast parser and to one without (``create_app(fast_forms=False)``),
over the same database; status, headers and body must be the same, a fresh token's value aside."""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import urlencode

import schemathesis
from connexion.json_schema import resolve_refs
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st
from schemathesis import GenerationMode
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog
from service.settings import Settings
from service.web.contracts import contract
from service.web.fast_forms import FormRules
from tests.support import token_flows as flows
from tests.support.apps import make_app
from tests.support.clocks import MovableClock
from tests.support.loops import each

EXAMPLES = 60  # per operation, per generation mode, and of raw bodies: up to 2 × 3 × 60 = 360 bodies in all
FRESH = ("access_token", "refresh_token", "id_token")  # a new value on every issue: compared by presence
VARYING_HEADERS = ("date", "content-length", "x-request-id")  # the length varies with a fresh token's value
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
# The bytes a form parser treats specially, and some that any field refuses (controls, non-ASCII).
SPECIAL = b"=&%+ab0:\x00\x7f\xc3\xa9 "
RAW = st.lists(st.sampled_from(list(SPECIAL)), max_size=80).map(bytes)


def form_body(body: Any) -> bytes:
    """A generated body as a client would send it: each field once per value, other values as text."""
    if not isinstance(body, dict):
        return str(body).encode()
    pairs = []
    for name, value in body.items():
        for item in value if isinstance(value, list) else [value]:
            pairs.append((str(name), item if isinstance(item, str) else json.dumps(item)))
    return urlencode(pairs).encode()


def fast_rules(path: str) -> FormRules:
    """The rules the fast parser reads ``path``'s form by: its schema as Connexion hands it to the validator
    (references resolved, the document's components beside it)."""
    document = resolve_refs(copy.deepcopy(dict(contract("identity.yaml").document)))
    schema = document["paths"][path]["post"]["requestBody"]["content"][FORM["Content-Type"]]["schema"]
    rules = FormRules.of({**schema, "components": document["components"]}, strict=False)
    assert rules is not None, path
    return rules


def answer(http: TestClient, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
    response = http.post(path, content=body, headers={**FORM, **headers})
    kept = {name: value for name, value in response.headers.items() if name not in VARYING_HEADERS}
    document: Any = response.content
    if response.headers.get("content-type") == "application/json":
        document = response.json()
        if isinstance(document, dict):
            document = {key: ("fresh" if key in FRESH else value) for key, value in document.items()}
    return response.status_code, kept, document


def test_generated_token_and_introspection_forms_are_answered_alike_by_both_parsers(
    app: Any, settings: Settings, engine: Engine, catalog: Catalog, clock: MovableClock, world: flows.World
) -> None:
    reference = make_app(settings, catalog=catalog, clock=clock, fast_forms=False)
    schema = schemathesis.openapi.from_dict(copy.deepcopy(dict(contract("identity.yaml").document)))
    cases: list[str] = []
    proven: list[str] = []  # the cases the fast parser reads itself (the others it leaves to Connexion's)
    with TestClient(app) as fast, TestClient(reference) as slow:
        token = flows.application_token(fast, world.reporter).json()["access_token"]
        extras = {"/oauth2/token": b"grant_type=client_credentials", "/oauth2/introspect": b"token=" + token.encode()}
        rules = {path: fast_rules(path) for path in extras}

        def compare(path: str, body: bytes, authenticated: bool) -> None:
            headers = world.reporter.basic if authenticated else {}
            assert answer(fast, path, body, headers) == answer(slow, path, body, headers), body
            cases.append(path)
            if rules[path].pairs(body) is not None:
                proven.append(path)

        def generated(path: str, mode: GenerationMode) -> None:
            @given(case=schema[path]["POST"].as_strategy(generation_mode=mode), authenticated=st.booleans())
            @examples(max_examples=EXAMPLES, database=None, deadline=None, suppress_health_check=list(HealthCheck))
            def run(case: Any, authenticated: bool) -> None:
                compare(path, form_body(case.body), authenticated)

            run()

        def raw_bodies(path: str, extra: bytes) -> None:
            @given(raw=RAW, known=st.booleans(), authenticated=st.booleans())
            @examples(max_examples=EXAMPLES, database=None, deadline=None, suppress_health_check=list(HealthCheck))
            def run(raw: bytes, known: bool, authenticated: bool) -> None:
                compare(path, extra + b"&" + raw if known else raw, authenticated)

            run()

        for path, extra in extras.items():
            for mode in GenerationMode:
                generated(path, mode)
            raw_bodies(path, extra)
    assert len(cases) >= 2 * 3 * EXAMPLES * 0.9  # hypothesis may stop a mode early when it runs out of cases
    assert set(proven) == set(extras), "both parsers must each read some of the bodies"


# Media types and charsets as clients send them: each reaches Connexion's validation (its 415, its choice of the body
# validator by media type); more charsets than the validators kept per operation (connexion_adapter._KEPT).
CONTENT_TYPES: list[list[tuple[str, str]]] = [
    [],
    [("content-type", "application/x-www-form-urlencoded")],
    [("content-type", "application/x-www-form-urlencoded; charset=utf-8")],
    [("content-type", "application/x-www-form-urlencoded;charset=latin-1")],
    [("content-type", "Application/X-WWW-Form-Urlencoded")],
    [("content-type", "application/x-www-form-urlencoded; boundary=x")],
    [("content-type", "application/x-www-form-urlencoded"), ("content-type", "text/plain")],
    [("content-type", "text/plain"), ("content-type", "application/x-www-form-urlencoded")],
    [("content-type", "text/plain")],
    [("content-type", "application/json")],
    [("content-type", "multipart/form-data; boundary=x")],
    [("content-type", "")],
    [("content-type", "application/x-www-form-urlencoded; charset=utf-8; n=1")],
    *([("content-type", f"application/x-www-form-urlencoded;charset=x-{n}")] for n in range(10)),
]


def test_media_types_and_charsets_are_answered_alike_with_validators_made_once_or_per_request(
    app: Any, settings: Settings, engine: Engine, catalog: Catalog, clock: MovableClock, world: flows.World
) -> None:
    """The fast app keeps each operation's validators (``_OnceValidation``); the reference makes them on every
    request, as Connexion does: the same answers for every ``Content-Type`` (none, several, unknown, cased)."""
    reference = make_app(settings, catalog=catalog, clock=clock, fast_forms=False)
    with TestClient(app) as fast, TestClient(reference) as slow:
        token = flows.application_token(fast, world.reporter).json()["access_token"]
        bodies = {
            "/oauth2/token": [b"grant_type=client_credentials", b"grant_type="],
            "/oauth2/introspect": [b"token=" + token.encode(), b"tokens=x"],
        }
        for path, forms in bodies.items():
            for body in forms:
                for content_type in each(CONTENT_TYPES):
                    answers = []
                    for http in (fast, slow):
                        response = http.post(path, content=body, headers=[*content_type, *world.reporter.basic.items()])
                        kept = {k: v for k, v in response.headers.items() if k not in VARYING_HEADERS}
                        document = response.json() if "json" in response.headers.get("content-type", "") else None
                        if isinstance(document, dict):
                            document = {k: ("fresh" if k in FRESH else v) for k, v in document.items()}
                        answers.append((response.status_code, kept, document))
                    assert answers[0] == answers[1], (path, body, content_type)
