"""Parameter validation from the contract, compiled once per operation.

Replaces Connexion's parameter validator (which builds a fresh JSON Schema
validator for every parameter of every request and reports no parameter name)
with one that compiles each parameter's schema once, reports every invalid
parameter by name, and refuses repeated and unknown query parameters.
"""

from __future__ import annotations

import re
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
from jsonschema.exceptions import best_match

from service.problems import invalid_parameters

_INTEGER = re.compile(r"-?[0-9]+")  # int() would also take "1_0", " 3", "+3" and non-ASCII digits
_compiled: dict[int, Draft4Validator] = {}  # id(parameter definition) -> validator; definitions live as long as the app


def _validator(param: dict[str, Any]) -> Draft4Validator:
    validator = _compiled.get(id(param))
    if validator is None:
        validator = Draft4Validator(param.get("schema", param), format_checker=Draft4Validator.FORMAT_CHECKER)
        _compiled[id(param)] = validator
    return validator


class ContractParameterValidator(ParameterValidator):
    def validate_request(self, request: ConnexionRequest) -> None:
        errors: list[tuple[str, str]] = []
        declared = {param["name"] for param in self.parameters.get("query", [])}
        integers = {p["name"] for p in self.parameters.get("query", []) if p.get("schema", p).get("type") == "integer"}
        seen: set[str] = set()
        for name, raw in parse_qsl(request.scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True):
            if name in seen and name in declared:
                errors.append((name, "sent more than once; send it once"))
            elif self.strict_validation and name not in declared and name not in seen:
                errors.append((name, "not a parameter of this operation"))
            elif name in integers and not _INTEGER.fullmatch(raw):
                errors.append((name, f"{raw[:40]!r} is not a whole number"))
            seen.add(name)
        if errors:
            raise invalid_parameters(errors)

        sources = {
            "query": request.query_params,
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
                value = values.get(name.replace("-", "_") if where == "path" else name)
                if value is None:
                    if param.get("required"):
                        errors.append((name, "required"))
                    continue
                error = best_match(_validator(param).iter_errors(value))
                if error is not None:
                    errors.append((name, _reason(error.message)))
        if errors:
            raise invalid_parameters(errors)


def _reason(message: str) -> str:
    """Shorten jsonschema's enum message, which would list every allowed value."""
    if " is not one of " in message:
        return message.split(" is not one of ", 1)[0] + " is not one of the allowed values"
    return message


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
