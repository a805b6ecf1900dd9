"""Parameter validation from the contract, compiled once per operation.

Replaces Connexion's parameter validator (which builds a fresh JSON Schema
validator for every parameter of every request and reports no parameter name)
with one that compiles each parameter's schema once, reports every invalid
parameter of a request at once, by name and in words (an enum refusal lists the
allowed values, a pattern refusal says what the value must look like), and
refuses repeated and unknown query parameters. The menus and operations APIs
both use it: one voice for every parameter error.

Each simple schema (a string or integer with bounds, an enum, a pattern) is
also compiled into a plain Python check that accepts exactly what it can prove
valid; anything it does not accept goes to the JSON Schema validator, which
decides and words the error. So the fast check can only skip work, never change
an answer. Query values are typed from the one parse made for the duplicate
check, as Connexion's URI parser would type them (strings, whole numbers).

When every query parameter is a plain scalar, the validated, typed values (with the
contract's defaults) are also left in the request's state for handlers that take no
arguments (``handlers/menus.py``), so the query is not parsed and typed a second time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from connexion.lifecycle import ConnexionRequest
from connexion.middleware.response_validation import (
    ResponseValidationAPI,
    ResponseValidationMiddleware,
    ResponseValidationOperation,
)
from connexion.operations import AbstractOperation
from connexion.validators.parameter import ParameterValidator
from jsonschema import Draft4Validator
from jsonschema.exceptions import ValidationError, best_match

from service.web.problems import invalid_parameters

_INTEGER = re.compile(r"-?[0-9]+")  # int() would also take "1_0", " 3", "+3" and non-ASCII digits
# id(parameter definition) -> (the definition, its validator); the definition is held so its id stays its own.
_compiled: dict[int, tuple[object, Draft4Validator]] = {}


def _validator(param: dict[str, Any]) -> Draft4Validator:
    kept = _compiled.get(id(param))
    if kept is None or kept[0] is not param:
        validator = Draft4Validator(param.get("schema", param), format_checker=Draft4Validator.FORMAT_CHECKER)
        kept = _compiled[id(param)] = (param, validator)
    return kept[1]


Check = Callable[[Any], bool]
_IGNORED = frozenset({"description", "example", "default", "nullable", "title"})  # keywords that never reject
_SIMPLE = frozenset({"type", "enum", "pattern", "minLength", "maxLength", "minimum", "maximum"}) | _IGNORED


def _fast_check(schema: dict[str, Any]) -> Check | None:
    """A plain check that is True only for values the schema accepts; None when the schema is not simple."""
    if not set(schema) <= _SIMPLE or schema.get("type") not in ("string", "integer"):
        return None
    enum = frozenset(schema["enum"]) if "enum" in schema else None
    if schema["type"] == "string":
        pattern = re.compile(schema["pattern"]) if "pattern" in schema else None
        shortest, longest = schema.get("minLength", 0), schema.get("maxLength")

        def string(value: Any) -> bool:
            return (
                type(value) is str
                and len(value) >= shortest
                and (longest is None or len(value) <= longest)
                and (enum is None or value in enum)
                and (pattern is None or pattern.search(value) is not None)
            )

        return string
    if "pattern" in schema or "minLength" in schema or "maxLength" in schema:
        return None
    low, high = schema.get("minimum"), schema.get("maximum")

    def integer(value: Any) -> bool:
        return (
            type(value) is int
            and (low is None or value >= low)
            and (high is None or value <= high)
            and (enum is None or value in enum)
        )

    return integer


class _Compiled:
    """What a validator needs per request, worked out once from its operation's parameters."""

    def __init__(self, parameters: dict[str, list[dict[str, Any]]]) -> None:
        query = parameters.get("query", [])
        self.declared = frozenset(param["name"] for param in query)
        names = ", ".join(param["name"] for param in query)
        self.unknown = (
            f"not a parameter of this operation; it takes {names}"
            if names
            else "not a parameter of this operation, which takes none"
        )
        self.integers = frozenset(p["name"] for p in query if p.get("schema", p).get("type") == "integer")
        # Typing query values from our own parse is exact only when every query parameter is a plain scalar.
        self.plain_query = all(p.get("schema", p).get("type") in ("string", "integer") for p in query)
        self.checks = {
            id(param): _fast_check(param.get("schema", param)) for params in parameters.values() for param in params
        }
        # What the handler gets: each query parameter's contract default, overridden by what was sent.
        self.defaults = {p["name"]: p.get("schema", p)["default"] for p in query if "default" in p.get("schema", p)}
        self.integer_paths = frozenset(
            p["name"] for p in parameters.get("path", []) if p.get("schema", p).get("type") == "integer"
        )


# Connexion makes a new validator for every request, from the same list of the operation's parameters: the
# rules are kept by that list (held here too, so that its id can never be another object's).
_rules_by_operation: dict[int, tuple[object, _Compiled]] = {}


class ContractParameterValidator(ParameterValidator):
    def __init__(self, parameters: list[dict[str, Any]], *args: Any, **kwargs: Any) -> None:
        super().__init__(parameters, *args, **kwargs)
        self._operation_parameters = parameters

    def _rules(self) -> _Compiled:
        source = self._operation_parameters
        kept = _rules_by_operation.get(id(source))
        if kept is None or kept[0] is not source:
            kept = _rules_by_operation[id(source)] = (source, _Compiled(self.parameters))
        return kept[1]

    def validate_request(self, request: ConnexionRequest) -> None:
        rules = self._rules()
        errors: list[tuple[str, str]] = []
        declared, integers = rules.declared, rules.integers
        seen: dict[str, Any] = {}
        for name, raw in parse_qsl(request.scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True):
            if name in seen and name in declared:
                errors.append((name, "sent more than once; send it once"))
            elif self.strict_validation and name not in declared and name not in seen:
                errors.append((name, rules.unknown))
            elif name in integers and not _INTEGER.fullmatch(raw):
                errors.append((name, f"{_shown(raw)} is not a whole number"))
            seen[name] = int(raw) if name in integers and _INTEGER.fullmatch(raw) else raw
        reported = {name for name, _ in errors}  # each parameter once, with its first fault

        sources = {
            "query": seen if rules.plain_query else request.query_params,
            "path": request.path_params,
            "header": request.headers,
            "cookie": request.cookies,
        }
        for where, params in self.parameters.items():
            values = sources.get(where)
            if values is None:
                continue
            for param in params:
                name = param["name"]
                if name in reported:
                    continue
                value = values.get(name.replace("-", "_") if where == "path" else name)
                if value is None:
                    if param.get("required"):
                        errors.append((name, "required"))
                    continue
                check = rules.checks.get(id(param))
                if check is not None and check(value):
                    continue
                error = best_match(_validator(param).iter_errors(value))
                if error is not None:
                    errors.append((name, reason(error)))
        if errors:
            raise invalid_parameters(errors)
        if rules.plain_query:
            request.scope.setdefault("state", {})[ARGUMENTS] = _arguments(rules, seen, request.path_params)


ARGUMENTS = "arguments"  # the key, in the request's state, of the validated arguments (see handlers/menus.py)


def _arguments(rules: _Compiled, query: dict[str, Any], path: dict[str, Any]) -> dict[str, Any]:
    """The handler's arguments from this one parse: path and declared query parameters, typed, with defaults."""
    arguments = {**rules.defaults, **{name: value for name, value in query.items() if name in rules.declared}}
    for name, value in path.items():
        arguments[name] = int(value) if name in rules.integer_paths else value
    return arguments


# What each pattern of the contracts means, in words: a refusal names the rule, not a regular expression.
PATTERN_WORDS = {
    "^[a-z0-9]+(-[a-z0-9]+)*$": (
        "is not a slug: lower-case letters a-z and digits, in words joined by single hyphens (like creme-brulee)"
    ),
    "^[A-Za-z]{2}$": "is not a two-letter country code (like IN or fr)",
    "^[A-Z]{2}$": "is not a two-letter upper-case country code (like IN)",
    "\\S": "has nothing but white space; send at least one search term",
    "^[A-Za-z0-9_-]+$": "is not a cursor: send a next_cursor back exactly as it came",
}
_TYPE_WORDS = {"integer": "a whole number", "string": "a string", "number": "a number", "boolean": "true or false"}


def reason(error: ValidationError) -> str:
    """jsonschema's refusal of one value, in the contract's words: an enum names its values, a pattern its rule."""
    value, rule = error.instance, error.validator_value
    if error.validator == "enum":
        return f"{_shown(value)} is not one of: {', '.join(str(allowed) for allowed in rule)}"
    if error.validator == "pattern":
        return f"{_shown(value)} {PATTERN_WORDS.get(rule, f'does not have the required form ({rule})')}"
    if error.validator == "minLength":
        return f"{_shown(value)} is too short: at least {rule} character{'s' if rule != 1 else ''}"
    if error.validator == "maxLength":
        return f"{_shown(value)} is too long: at most {rule} characters"
    if error.validator == "minimum":
        return f"{_shown(value)} is less than the minimum of {rule}"
    if error.validator == "maximum":
        return f"{_shown(value)} is greater than the maximum of {rule}"
    if error.validator == "type" and isinstance(rule, str):
        return f"{_shown(value)} is not {_TYPE_WORDS.get(rule, rule)}"
    return str(error.message)


def _shown(value: Any) -> str:
    """A value as quoted in a message: at most 40 characters of what the client sent."""
    return repr(value[:40] + "…" if len(value) > 40 else value) if isinstance(value, str) else repr(value)


# Response headers that the gate adds outside Connexion, after response validation has run.
GATE_HEADERS = frozenset({"etag", "cache-control", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"})


class _ResponseValidationOperation(ResponseValidationOperation):
    @staticmethod
    def validate_required_headers(headers: list[tuple[bytes, bytes]], response_definition: dict[str, Any]) -> None:
        declared = response_definition.get("headers", {})
        inner = {name: spec for name, spec in declared.items() if name.lower() not in GATE_HEADERS}
        ResponseValidationOperation.validate_required_headers(headers, {**response_definition, "headers": inner})


class _ResponseValidationAPI(ResponseValidationAPI):
    def make_operation(self, operation: AbstractOperation) -> Any:
        if not self.validate_responses:
            return self.next_app
        return _ResponseValidationOperation(self.next_app, operation=operation, validator_map=self.validator_map)


class ContractResponseValidation(ResponseValidationMiddleware):
    """Connexion's response validation, minus the headers the gate adds after it (checked end to end instead)."""

    api_cls = _ResponseValidationAPI
