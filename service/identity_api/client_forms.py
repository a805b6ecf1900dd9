"""The token and introspection endpoints' well-formed requests, answered before Connexion's layers.

A client asks for tokens and introspects them over and over (RFC 6749 §4.4, RFC 7662 §2.1): the same small form
with its client credentials. Connexion's stack around such a request (routing, its middleware, the body read and
parsed twice, the form's validation with a fresh schema validator, the response built twice) cost about half of
the endpoint's time (docs/performance.md). A request this module recognises as what the contract accepts goes
straight to the domain instead, in a worker thread as before, and its answer, or the domain's error, is the one
the Connexion handler gives (``handlers/token.py``, ``handlers/introspection.py``; errors by ``http_errors.py``).

Recognised: ``POST`` with ``Content-Type: application/x-www-form-urlencoded`` (no parameter) and a
``Content-Length`` within the form limit (``BodyLimit`` outside has already refused one over it, and turned a
chunked body into one of known length), whose body is ``name=value`` pairs joined by ``&``, each name once,
every field the contract declares a string within its bounds and of its pattern, its required fields present, and
no control character anywhere (``without_controls``, service/web/request_reading.py). Anything else, an error of the
request's shape among it, goes on to Connexion with the body as it was read, and is answered there in the
contract's words, as before.
Where responses are validated (``MENUS_VALIDATE_RESPONSES``, the tests), the answers given here are validated
against the contract too (``ResponseCheck``), as Connexion validates the others.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from operator import attrgetter
from typing import Any
from urllib.parse import unquote_plus

import orjson
from connexion.json_schema import Draft4ResponseValidator, resolve_refs
from jsonschema import Draft4Validator
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from identity.issuer import INTROSPECTION_PATH, TOKEN_PATH
from identity.provider import Provider
from identity.text import has_control
from service.identity_api.handler_support import NO_STORE, json
from service.identity_api.http_errors import IdentityErrors
from service.web.body_limit import replay
from service.web.contracts import Contract, contract
from service.web.offload import Workers

FORM = b"application/x-www-form-urlencoded"
Pairs = list[tuple[str, str]]
Endpoint = Callable[[Pairs, str | None, str | None], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class FormRules:
    """An operation's form as the contract declares it, when every field is a string with length bounds and, at
    most, a pattern (RFC 6749 Appendix A's character classes: VSCHAR, NQCHAR)."""

    required: frozenset[str]
    bounds: Mapping[str, tuple[int, int]]  # field: (minLength, maxLength)
    patterns: Mapping[str, re.Pattern[str]]  # field: its pattern, matched as jsonschema does (``search``)

    @classmethod
    def of(cls, identity: Contract, template: str) -> FormRules:
        document = identity.document
        schema = _resolved(document, identity.operation("post", template)["requestBody"]["content"])
        bounds, patterns = {}, {}
        for name, field in schema["properties"].items():
            field = _resolved(document, field)
            rules = {k: v for k, v in field.items() if k not in ("description", "example")}
            if rules.pop("type", None) != "string" or not set(rules) <= {"minLength", "maxLength", "pattern"}:
                raise ValueError(f"identity.yaml {template}: the field {name} is not a bounded string")
            bounds[name] = (rules.get("minLength", 0), rules.get("maxLength", 2**31))
            if "pattern" in rules:
                patterns[name] = re.compile(rules["pattern"])
        return cls(frozenset(schema.get("required", ())), bounds, patterns)

    def pairs(self, body: bytes) -> Pairs | None:
        """The form's pairs as Starlette's form parser reads them, if the contract accepts the form; else None."""
        pairs: Pairs = []
        for part in body.split(b"&"):
            raw_name, equals, raw_value = part.partition(b"=")
            if not raw_name or not equals or b"=" in raw_value:
                return None  # not plain name=value: Starlette's parser decides what it means
            pairs.append((unquote_plus(raw_name.decode("latin-1")), unquote_plus(raw_value.decode("latin-1"))))
        names = {name for name, _ in pairs}
        if len(names) != len(pairs) or not self.required <= names:
            return None
        for name, value in pairs:
            low, high = self.bounds.get(name, (0, 2**31))
            if not low <= len(value) <= high or has_control(name) or has_control(value):
                return None
            pattern = self.patterns.get(name)
            if pattern is not None and pattern.search(value) is None:
                return None
        return pairs


def _resolved(document: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    if "application/x-www-form-urlencoded" in node:
        node = node["application/x-www-form-urlencoded"]["schema"]
    while "$ref" in node:
        target: Any = document
        for key in node["$ref"].removeprefix("#/").split("/"):
            target = target[key]
        node = target
    return node


class ResponseCheck:
    """The contract's answers of the operations ``templates`` (POST): a response of an undeclared status, or whose
    JSON body breaks its schema, raises (and so becomes a 500, as Connexion's response validation makes it)."""

    def __init__(self, identity: Contract, templates: list[str]) -> None:
        resolved = _resolved_document(identity.name)
        self._schemas: dict[tuple[str, int], Any] = {}
        for template in templates:
            for status, response in resolved["paths"][template]["post"]["responses"].items():
                schema = response.get("content", {}).get("application/json", {}).get("schema")
                if schema is not None:
                    self._schemas[(template, int(status))] = schema

    def check(self, template: str, response: Response) -> None:
        schema = self._schemas.get((template, response.status_code))
        if schema is None:
            raise ValueError(f"identity.yaml POST {template} declares no JSON answer {response.status_code}")
        Draft4ResponseValidator(schema, format_checker=Draft4Validator.FORMAT_CHECKER).validate(
            orjson.loads(bytes(response.body))
        )


@cache
def _resolved_document(name: str) -> dict[str, Any]:
    """The document ``name`` with every ``$ref`` replaced by what it names (once per process)."""
    resolved: dict[str, Any] = resolve_refs(copy.deepcopy(dict(contract(name).document)))
    return resolved


class ClientForms:
    """``POST`` to the token and introspection endpoints below ``issuer_path``, when well-formed (see above)."""

    def __init__(
        self,
        provider: Provider,
        identity: Contract,
        errors: IdentityErrors,
        client_threads: Workers,
        form_limit: int,
        validate_responses: bool = False,
    ) -> None:
        path = provider.issuer.path
        # The domain's method is looked up at each request, as the handlers do (``provider().token_endpoint…``).
        self._provider = provider
        self._endpoints: dict[str, tuple[Callable[[Provider], Endpoint], FormRules, str]] = {
            path + TOKEN_PATH: (attrgetter("token_endpoint.exchange"), FormRules.of(identity, TOKEN_PATH), TOKEN_PATH),
            path + INTROSPECTION_PATH: (
                attrgetter("introspection.introspect"),
                FormRules.of(identity, INTROSPECTION_PATH),
                INTROSPECTION_PATH,
            ),
        }
        self._check = ResponseCheck(identity, [TOKEN_PATH, INTROSPECTION_PATH]) if validate_responses else None
        self._errors = errors
        self._threads = client_threads
        self._form_limit = form_limit

    def __contains__(self, path: str) -> bool:
        return path in self._endpoints

    async def __call__(self, scope: Scope, receive: Receive, send: Send, otherwise: ASGIApp) -> None:
        """Answer the request at ``scope``, or hand it to ``otherwise`` (Connexion) with its body as it was read."""
        endpoint, rules, template = self._endpoints[scope["path"]]
        length = -1
        authorization = origin = None  # the first of each, as the handlers read them (Starlette's Headers.get)
        types: list[bytes] = []
        for name, value in scope["headers"]:
            if name == b"content-type":
                types.append(value.lower())
            elif name == b"content-length":
                length = int(value) if value.isdigit() else -1
            elif name == b"authorization" and authorization is None:
                authorization = value.decode("latin-1")
            elif name == b"origin" and origin is None:
                origin = value.decode("latin-1")
            elif name == b"transfer-encoding":
                length = -1
        if types != [FORM] or not 0 < length <= self._form_limit:
            await otherwise(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left: nobody to answer
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        pairs = rules.pairs(body) if len(body) == length else None
        if pairs is None:
            await otherwise(scope, replay(body, receive), send)
            return
        together = writes = None
        if template == INTROSPECTION_PATH:  # the token's record, read with those of the others queued with it
            token = next((value for name, value in pairs if name == "token"), None)
            if token is not None:
                together = (self._provider.verifier.read_together, token)
        elif template == TOKEN_PATH and ("grant_type", "client_credentials") in pairs:  # its record with the others
            writes = self._provider.issued_together
        try:
            answer = await self._threads.run(
                endpoint(self._provider), pairs, authorization, origin, together=together, writes=writes
            )
        except Exception as error:  # the domain's errors, and the database's, in the endpoint's form
            response = self._errors.response(scope, error)
        else:
            response = json(answer, headers=NO_STORE)
        if self._check is not None:
            self._check.check(template, response)
        await response(scope, receive, send)
