"""Parameter validation from the contract, compiled once per operation: the service's own rules.

Connexion's parameter validator builds a fresh JSON Schema validator for every
parameter of every request and reports no parameter name; ``ParameterRules``
compiles each parameter's schema once, reports every invalid parameter of a
request at once, by name and in words (an enum refusal lists the allowed
values, a pattern refusal says what the value must look like), and refuses
repeated and unknown query parameters. The menus and operations APIs both use
it (``service.web.connexion_adapter`` puts it in Connexion's place): one voice
for every parameter error.

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

from service.web.problems import invalid_parameters

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
            f"not a parameter of this operation; it takes {names}"
            if names
            else "not a parameter of this operation, which takes none"
        )
        self.integers = frozenset(p["name"] for p in query if p.get("schema", p).get("type") == "integer")
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
        it, asked for only when a query parameter is not a plain scalar; ``strict``: refuse unknown parameters."""
        errors: list[tuple[str, str]] = []
        declared, integers = self.declared, self.integers
        seen: dict[str, Any] = {}
        for name, raw in parse_qsl(query_string, keep_blank_values=True):
            if name in seen and name in declared:
                errors.append((name, "sent more than once; send it once"))
            elif strict and name not in declared and name not in seen:
                errors.append((name, self.unknown))
            elif name in integers and not _INTEGER.fullmatch(raw):
                errors.append((name, f"{_shown(raw)} is not a whole number"))
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
                        errors.append((param.name, "required"))
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
