"""The contract's rules and words as Connexion's request validators, given through its documented
``validator_map`` (``service.web.connexion_adapter.connexion_app`` hands them in). Not hooks: nothing upstream
would remove them, and the adapter keeps every hook into Connexion's internals.

- **The contract's parameter rules** (``service.web.validation.ParameterRules``, ``ContractParameters``) in place of
  Connexion's parameter validator, for the menus and operations APIs: one message per invalid parameter, by name,
  schemas compiled once per operation; the validated arguments go to the handlers (``request_state.ARGUMENTS``), so
  the query is parsed once.
- **The contract's form and JSON rules** (``service.web.validation.body_errors``; ``ContractForm``,
  ``ContractJson``) in place of Connexion's body validation: a missing body names its required fields, every refused
  field is named, in words, and no value or validator text is repeated (Connexion answers ``RequestBody is
  required`` and jsonschema's message, which quotes the value). Connexion's form parsing is kept, except for a body
  that the form's ``FormRules`` (``service.web.fast_forms``, derived from the same schema) proves valid: its pairs go
  to the handler as read (``request_state.FORM``), neither parsed again nor checked by jsonschema.

Each subclasses a validator ``connexion.validators`` exports and overrides the methods its
``AbstractRequestBodyValidator`` documents for subclasses (``_parse``, ``_validate``, ``wrap_receive``), reading the
attributes that base class keeps its arguments in; ``logging``'s guard on Connexion's own form validator stays in
the adapter with the hooks.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from connexion.datastructures import MediaTypeDict
from connexion.lifecycle import ConnexionRequest
from connexion.uri_parsing import AbstractURIParser
from connexion.validators import VALIDATOR_MAP, FormDataValidator, JSONRequestBodyValidator
from starlette.datastructures import Headers
from starlette.types import Receive, Scope

from service.web.fast_forms import FormRules
from service.web.problems import invalid_parameters
from service.web.request_parts import form_headers, once, whole_body
from service.web.request_state import ARGUMENTS, FORM
from service.web.validation import ParameterRules, body_errors, missing_body, missing_json

_FORM = "application/x-www-form-urlencoded"
_PROVEN = object()  # the body ``FormRules`` proved valid: its pairs are in the request's state
_RULES: dict[tuple[int, bool], tuple[Mapping[str, Any], FormRules | None]] = {}  # keeps each schema, so its id


def _form_rules(schema: Mapping[str, Any], strict: bool) -> FormRules | None:
    """The rules of one operation's form schema, worked out at its first request (Connexion makes a validator
    for every request, from the same schema object)."""
    kept = _RULES.get((id(schema), strict))
    if kept is None:
        kept = _RULES[(id(schema), strict)] = (schema, FormRules.of(schema, strict=strict))
    return kept[1]


class ContractParameters:
    """Connexion's ``validator_map["parameter"]``, one per app: the contract's rules, compiled once per operation.

    Connexion makes a parameter validator for every request, from the operation's parameter list, and calls
    its ``validate(scope)`` (``connexion/middleware/request_validation.py``). The rules are kept here by
    operationId, which Connexion's routing has put in the scope: ``operation_of`` reads it (the adapter hands in
    its reader, ``service.web.connexion_adapter``, where the hooks into Connexion's internals are). Nothing to
    remove upstream: ``validator_map`` is Connexion's documented way to bring one's own validator."""

    def __init__(self, operation_of: Callable[[Scope], str]) -> None:
        self.operation_of = operation_of
        self._rules: dict[str, ParameterRules] = {}

    def __call__(
        self,
        parameters: list[dict[str, Any]],
        *,
        uri_parser: AbstractURIParser,
        strict_validation: bool = False,
        security_query_params: Iterable[str] = (),
    ) -> _ParameterValidation:
        return _ParameterValidation(self, parameters, uri_parser, strict_validation)

    def rules(self, operation_id: str, parameters: Iterable[Mapping[str, Any]]) -> ParameterRules:
        rules = self._rules.get(operation_id)
        if rules is None:
            rules = self._rules[operation_id] = ParameterRules(parameters)
        return rules


@dataclass(eq=False, slots=True)
class _ParameterValidation:
    """One request's parameter validation (what Connexion's ``ParameterValidator.validate`` does, by our rules)."""

    factory: ContractParameters
    parameters: list[dict[str, Any]]
    uri_parser: AbstractURIParser
    strict: bool

    def validate(self, scope: Scope) -> None:
        if not self.parameters and not self.strict:  # nothing to check (the token and introspection endpoints)
            ARGUMENTS.put(scope, {})
            return
        rules = self.factory.rules(self.factory.operation_of(scope), self.parameters)
        request = ConnexionRequest(scope, uri_parser=self.uri_parser)
        arguments = rules.validate(
            query_string=scope.get("query_string", b"").decode("latin-1"),
            typed_query=lambda: request.query_params,
            path=request.path_params,
            headers=request.headers,
            cookies=request.cookies,
            strict=self.strict,
        )
        if arguments is not None:
            ARGUMENTS.put(scope, arguments)


class ContractForm(FormDataValidator):  # type: ignore[misc]  # connexion ships without type hints
    """Connexion's form validator with the contract's rules and words (``service.web.validation.body_errors``).

    Connexion parses the form (``FormDataValidator._parse``) and calls ``_validate(body)``, the methods its
    ``AbstractRequestBodyValidator`` documents for subclasses to override; a missing body is refused in
    ``wrap_receive`` before that, in words of its own (``RequestBody is required``), so the check is made here
    first. A plain form that the schema's ``FormRules`` proves valid (``service.web.fast_forms``) is read once,
    by those rules, and its pairs put in the request's state for the handler (``FORM``); any other body takes
    Connexion's parse and the contract's rules. ``fast = False`` (``WithoutFastForms``): every body takes
    Connexion's way (tests/api/test_form_parsers.py compares the two). A body of a plain form is read in
    ``wrap_receive`` itself, as the base class reads it, without its stream of chunks; the validator is made once
    per operation and media type (``service.web.connexion_adapter``), and its rules with it. Hooks: ``_schema``,
    ``_required``, ``_nullable``, ``_strict_validation``, the attributes Connexion's base class keeps its arguments
    in, and its ``_insert_messages`` (the body's messages handed on to the app) (stable since 3.0). Nothing
    upstream to remove: ``validator_map`` is the documented way."""

    fast = True

    async def wrap_receive(self, receive: Receive, *, scope: Scope) -> tuple[Receive, Scope]:
        length, content_types = form_headers(scope["headers"])
        if self._required and length.isdigit() and int(length) == 0:
            raise missing_body(self._schema)
        rules = self._rules
        if rules is None or content_types != [_FORM] or not length.isdigit() or int(length) == 0:
            wrapped: tuple[Receive, Scope] = await super().wrap_receive(receive, scope=scope)
            return wrapped
        # What the base class's ``wrap_receive`` does with a body (``Content-Length`` above 0), its stream read
        # here at once: the messages kept for the app, the body parsed (``_parse`` below) and validated.
        messages, body = await whole_body(receive)
        pairs = rules.pairs(body)
        if pairs is not None:
            FORM.put(scope, pairs)
        else:
            parsed = await super()._parse(once(body), scope)
            if not (parsed is None and self._nullable):
                self._validate(parsed)
        return self._insert_messages(receive, messages=messages), scope

    @functools.cached_property
    def _rules(self) -> FormRules | None:
        return _form_rules(self._schema, self._strict_validation) if self.fast else None

    async def _parse(self, stream: AsyncIterator[bytes], scope: Scope) -> Any:
        rules = self._rules
        if rules is None or form_headers(scope["headers"])[1] != [_FORM]:
            return await super()._parse(stream, scope)
        body = b"".join([chunk async for chunk in stream])
        pairs = rules.pairs(body)
        if pairs is None:
            return await super()._parse(once(body), scope)
        FORM.put(scope, pairs)
        return _PROVEN

    def _validate(self, body: Any) -> None:
        if body is _PROVEN:
            return
        if not isinstance(body, dict):
            raise invalid_parameters([("body", "must be a form of named fields")])
        errors = body_errors(self._schema, body, strict=self._strict_validation)
        if errors:
            raise invalid_parameters(errors)


class ContractJson(JSONRequestBodyValidator):  # type: ignore[misc]  # connexion ships without type hints
    """Connexion's JSON body validator with the contract's rules and words (``service.web.validation.body_errors``),
    as ``ContractForm`` for forms: a body that is not JSON, or not an object, is named ``body``; every refused field
    is named with its rule; an unknown field is refused by name; no value and no validator text is repeated
    (Connexion answers with jsonschema's message, which quotes the value). Connexion reads and parses the body
    (``_parse``) and calls ``_validate``, the methods its ``AbstractRequestBodyValidator`` documents for subclasses;
    hooks: ``_schema``, ``_required``, ``_encoding`` (stable since 3.0). Nothing upstream to remove:
    ``validator_map`` is the documented way."""

    async def wrap_receive(self, receive: Receive, *, scope: Scope) -> tuple[Receive, Scope]:
        length = Headers(scope=scope).get("content-length", "0").strip()
        if self._required and length.isdigit() and int(length) == 0:
            raise missing_json(self._schema)
        wrapped: tuple[Receive, Scope] = await super().wrap_receive(receive, scope=scope)
        return wrapped

    async def _parse(self, stream: AsyncIterator[bytes], scope: Scope) -> Any:
        body = b"".join([chunk async for chunk in stream])
        if not body:
            return None
        try:
            return json.loads(body.decode(self._encoding or "utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise invalid_parameters([("body", "must be a JSON object (application/json)")]) from None

    def _validate(self, body: Any) -> None:
        if body is None and self._required:
            raise missing_json(self._schema)
        if not isinstance(body, dict):
            raise invalid_parameters([("body", "must be a JSON object (application/json)")])
        errors = body_errors(self._schema, body, strict=True, what="body")
        if errors:
            raise invalid_parameters(errors)


class WithoutFastForms(ContractForm):
    """``ContractForm`` that leaves every body to Connexion's parser (the reference of the differential test)."""

    fast = False


# The body validators of ``validator_map["body"]``: Connexion's own, the contract's for forms and JSON
# (``WithoutFastForms``: every form through Connexion's parser, the reference of tests/api/test_form_parsers.py).
BODY_VALIDATORS = MediaTypeDict({**VALIDATOR_MAP["body"], _FORM: ContractForm, "*/*json": ContractJson})
REFERENCE_BODY_VALIDATORS = MediaTypeDict({**VALIDATOR_MAP["body"], _FORM: WithoutFastForms, "*/*json": ContractJson})
