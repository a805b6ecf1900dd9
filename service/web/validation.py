"""Parameter validation from the contract, compiled once per operation: the service's own rules.

Connexion's parameter validator builds a fresh JSON Schema validator for every
parameter of every request and reports no parameter name; ``ParameterRules``
compiles each parameter's schema once, reports every invalid parameter of a
request at once, by name and in words (an enum refusal lists the allowed
values, a pattern refusal says what the value must look like), and, where the
API is strict (menus, operations, console), refuses repeated and unknown query
parameters. Every API uses it (``service.web.contract_validators`` puts it in
Connexion's place), and ``body_errors`` words form bodies the same way: one voice
for every parameter and field error. A refusal states the rule, never the value
sent (docs/security.md).

Each simple schema (a string or integer with bounds, an enum, a pattern) is
also compiled into a plain Python check that accepts exactly what it can prove
valid; anything it does not accept goes to the JSON Schema validator, which
decides and words the error. So the fast check can only skip work, never change
an answer. Query values are typed from the one parse made for the duplicate
check, as Connexion's URI parser would type them (strings, whole numbers).

When every query parameter is a plain scalar, the validated, typed values (with the
contract's defaults) are also the handler's arguments (``request_state.ARGUMENTS``,
read by ``handlers/menus.py``), so the query is not parsed and typed a second time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl

from jsonschema import Draft4Validator
from jsonschema.exceptions import ValidationError, best_match

from service.web.problems import Problem, invalid_parameters

_INTEGER = re.compile(r"-?[0-9]+")  # int() would also take "1_0", " 3", "+3" and non-ASCII digits


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


class _Parameter:
    """One declared parameter: where it is sent, its name, and its schema compiled twice (fast check, validator)."""

    __slots__ = ("check", "key", "name", "required", "validator")

    def __init__(self, param: Mapping[str, Any]) -> None:
        schema = param.get("schema", param)
        self.name: str = param["name"]
        self.key = self.name.replace("-", "_") if param["in"] == "path" else self.name  # as Connexion names it
        self.required = bool(param.get("required"))
        self.check = _fast_check(schema)
        self.validator = Draft4Validator(schema, format_checker=Draft4Validator.FORMAT_CHECKER)


def _schema_of(parameters: Iterable[Mapping[str, Any]], name: str) -> dict[str, Any]:
    schema: dict[str, Any] = next(p.get("schema", p) for p in parameters if p["name"] == name)
    return schema


class ParameterRules:
    """Everything validating one operation's parameters takes, worked out once from its parameter list."""

    def __init__(self, parameters: Iterable[Mapping[str, Any]]) -> None:
        by_location: dict[str, list[Mapping[str, Any]]] = {}
        for param in parameters:
            by_location.setdefault(param["in"], []).append(param)
        self.parameters = {where: [_Parameter(p) for p in params] for where, params in by_location.items()}
        query = by_location.get("query", [])
        self.declared = frozenset(param["name"] for param in query)
        names = ", ".join(param["name"] for param in query)
        self.unknown = (
            f"is not a parameter of this operation; it takes {names}"
            if names
            else "is not a parameter of this operation, which takes none"
        )
        self.integers = frozenset(p["name"] for p in query if p.get("schema", p).get("type") == "integer")
        self.integer_rules = {name: integer_rule(_schema_of(query, name)) for name in self.integers}
        # Typing query values from our own parse is exact only when every query parameter is a plain scalar.
        self.plain_query = all(p.get("schema", p).get("type") in ("string", "integer") for p in query)
        # What the handler gets: each query parameter's contract default, overridden by what was sent.
        self.defaults = {p["name"]: p.get("schema", p)["default"] for p in query if "default" in p.get("schema", p)}
        self.integer_paths = frozenset(
            p["name"] for p in by_location.get("path", []) if p.get("schema", p).get("type") == "integer"
        )

    def validate(
        self,
        *,
        query_string: str,
        typed_query: Callable[[], Mapping[str, Any]],
        path: Mapping[str, Any],
        headers: Mapping[str, str],
        cookies: Mapping[str, str],
        strict: bool,
    ) -> dict[str, Any] | None:
        """Raise the 400 problem naming every invalid parameter; else the handler's arguments, when every query
        parameter is a plain scalar (None otherwise). ``typed_query``: the query as Connexion's URI parser types
        it, asked for only when a query parameter is not a plain scalar; ``strict``: refuse unknown and repeated
        parameters (not strict, as OAuth's endpoints are, both are left to the domain: RFC 6749 §3.1 answers a
        repeated parameter in the protocol's way, redirected once the redirect URI is known)."""
        errors: list[tuple[str, str]] = []
        declared, integers = self.declared, self.integers
        seen: dict[str, Any] = {}
        for name, raw in parse_qsl(query_string, keep_blank_values=True):
            if strict and name in seen and name in declared:
                errors.append((name, "was sent more than once; send it once"))
            elif strict and name not in declared and name not in seen:
                errors.append((name, self.unknown))
            elif name in integers and not _INTEGER.fullmatch(raw):
                errors.append((name, self.integer_rules[name]))
            seen[name] = int(raw) if name in integers and _INTEGER.fullmatch(raw) else raw
        reported = {name for name, _ in errors}  # each parameter once, with its first fault

        sources = {
            "query": seen if self.plain_query else typed_query(),
            "path": path,
            "header": headers,
            "cookie": cookies,
        }
        for where, params in self.parameters.items():
            values = sources.get(where)
            if values is None:
                continue
            for param in params:
                if param.name in reported:
                    continue
                value = values.get(param.key)
                if value is None:
                    if param.required:
                        errors.append((param.name, "is required"))
                    continue
                if param.check is not None and param.check(value):
                    continue
                error = best_match(param.validator.iter_errors(value))
                if error is not None:
                    errors.append((param.name, reason(error)))
        if errors:
            raise invalid_parameters(errors)
        return self._arguments(seen, path) if self.plain_query else None

    def _arguments(self, query: dict[str, Any], path: Mapping[str, Any]) -> dict[str, Any]:
        """The handler's arguments from this one parse: path and declared query parameters, typed, with defaults."""
        arguments = {**self.defaults, **{name: value for name, value in query.items() if name in self.declared}}
        for name, value in path.items():
            arguments[name] = int(value) if name in self.integer_paths else value
        return arguments


# What each pattern of the contracts means, in words: a refusal names the rule, not a regular expression.
PATTERN_WORDS = {
    "^[a-z0-9]+(-[a-z0-9]+)*$": (
        "must be a slug: lower-case letters a-z and digits, in words joined by single hyphens (like creme-brulee)"
    ),
    "^[A-Za-z]{2}$": "must be a two-letter country code (like IN or fr)",
    "^[A-Z]{2}$": "must be a two-letter upper-case country code (like IN)",
    "\\S": "must hold more than white space: send at least one search term",
    "^[A-Za-z0-9_-]+$": "must be a next_cursor sent back exactly as it came",
    "^key_[0-9a-f]{16}$": "must be an API key id: key_ and 16 hexadecimal digits (like key_3f9a0c1e5b7d2468)",
    "^usr_[0-9a-f]{16}$": "must be a user id: usr_ and 16 hexadecimal digits (like usr_3f9a0c1e5b7d2468)",
    "^inv_[0-9a-f]{16}$": "must be an invitation id: inv_ and 16 hexadecimal digits (like inv_3f9a0c1e5b7d2468)",
    "^cli_[0-9a-f]{16}$": "must be a client id: cli_ and 16 hexadecimal digits (like cli_3f9a0c1e5b7d2468)",
    "^[A-Za-z0-9_-]{1,100}$": "must be the token of an invitation's link, sent exactly as the link carries it",
    "^[\\x21-\\x7E]+$": "must hold printable ASCII characters without spaces only (%x21-7E)",
    # RFC 6749 Appendix A's character classes, for the OAuth forms and the console's CSRF token:
    "^[\\x20-\\x7E]*$": "must hold printable ASCII characters only (RFC 6749 Appendix A: VSCHAR, %x20-7E)",
    "^[\\x20\\x21\\x23-\\x5B\\x5D-\\x7E]*$": (
        "must hold printable ASCII characters only, without double quotes and backslashes (RFC 6749 Appendix A: "
        "NQCHAR, and spaces between scopes)"
    ),
    "^[^\\x00-\\x1F\\x7F-\\x9F]*$": "must not hold a control character",
    "^[\\x21\\x23-\\x5B\\x5D-\\x7E]+$": (
        "must be one scope: printable ASCII characters without spaces, double quotes and backslashes (RFC 6749 §3.3:"
        " scope-token)"
    ),
}
_TYPE_WORDS = {"integer": "an integer", "string": "a string", "number": "a number", "boolean": "true or false"}


def reason(error: ValidationError) -> str:
    """jsonschema's refusal of one value, as the rule the value breaks, in the contract's words.

    The value itself is never repeated (docs/security.md): it may be a secret, a token, or text meant to be
    shown to someone else. An integer's refusal states its whole rule (type and bounds), an enum names its
    values, a pattern its rule in words, a length its bounds."""
    schema, rule = error.schema if isinstance(error.schema, dict) else {}, error.validator_value
    if schema.get("type") == "integer" and error.validator in ("type", "minimum", "maximum"):
        return integer_rule(schema)
    if error.validator == "enum":
        return f"must be one of: {', '.join(str(allowed) for allowed in rule)}"
    if error.validator == "pattern":
        return PATTERN_WORDS.get(rule, "does not have the form the contract describes")
    if error.validator in ("minLength", "maxLength"):
        return length_rule(schema)
    if error.validator == "type" and isinstance(rule, str):
        return f"must be {_TYPE_WORDS.get(rule, rule)}"
    if error.validator in ("minimum", "maximum"):
        return integer_rule({**schema, "type": "number"})
    return "is not valid here"


def integer_rule(schema: dict[str, Any]) -> str:
    """``must be an integer from 1 to 100`` (or ``of at least 1``, ``of at most 5``): the schema's whole rule."""
    kind = _TYPE_WORDS.get(schema.get("type", "integer"), "a number")
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        return f"must be {kind} from {low} to {high}"
    if low is not None:
        return f"must be {kind} of at least {low}"
    if high is not None:
        return f"must be {kind} of at most {high}"
    return f"must be {kind}"


def length_rule(schema: dict[str, Any]) -> str:
    """``must be 1 to 100 characters long`` (or ``at least 1``, ``at most 100``)."""
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    if high is None:
        return f"must be at least {low} character{'s' if low != 1 else ''} long"
    if low:
        return f"must be {low} to {high} characters long"
    return f"must be at most {high} characters long"


def body_errors(
    schema: Mapping[str, Any], body: Mapping[str, Any], *, strict: bool, what: str = "form"
) -> list[tuple[str, str]]:
    """Every refused field of a form ``body`` under its ``schema``, by name and in words (each field once):
    a missing required field, a value breaking its field's rule, and, when ``strict``, a field the
    schema does not declare. A field's value is never repeated."""
    declared = schema.get("properties", {})
    errors: list[tuple[str, str]] = []
    if strict:
        names = ", ".join(declared)
        errors += [(name, f"is not a field of this {what}; it takes {names}") for name in body if name not in declared]
    for name in schema.get("required", []):
        if name not in body:
            errors.append((name, "is required"))
    validator = Draft4Validator(dict(schema), format_checker=Draft4Validator.FORMAT_CHECKER)
    for error in validator.iter_errors(dict(body)):
        if error.validator == "required" or not error.absolute_path:
            continue  # a missing field is named above; a body that is no mapping never reaches here
        name = str(error.absolute_path[0])
        if all(name != seen for seen, _ in errors):
            errors.append((name, reason(error)))
    return errors


def missing_body(schema: Mapping[str, Any]) -> Problem:
    """A required form body that was not sent: its required fields by name, or (none required) the body itself."""
    required = list(schema.get("required", []))
    if required:
        return invalid_parameters((name, "is required") for name in required)
    return Problem(400, "invalid_parameter", "This operation takes a form body (application/x-www-form-urlencoded).")


def missing_json(schema: Mapping[str, Any]) -> Problem:
    """A required JSON body that was not sent: its required fields by name, or (none required) the body itself."""
    required = list(schema.get("required", []))
    if required:
        return invalid_parameters((name, "is required") for name in required)
    return invalid_parameters([("body", "is required: a JSON object (application/json)")])
