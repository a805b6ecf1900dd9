"""Every operation of the five served documents, as requests a test can send: the walk of the error tests
(``test_refused_values.py``, ``test_authentication_challenges.py``)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from data.yaml_text import safe_load
from service.web.contracts import spec_path

# Each document and where its paths are served with the default settings (its `servers` entry).
DOCUMENTS = {
    "menus.yaml": "/v1",
    "identity.yaml": "",
    "operations.yaml": "",
    "console.yaml": "/console",
    "management.yaml": "/management/v1",
}
METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Operation:
    document: str
    method: str
    path: str  # the template, with the document's prefix
    parameters: list[dict[str, Any]] = field(default_factory=list)
    form: dict[str, Any] | None = None  # the schema of an application/x-www-form-urlencoded body

    @property
    def name(self) -> str:
        return f"{self.method.upper()} {self.path}"

    def filled(self, value: str) -> tuple[str, dict[str, str], dict[str, str]]:
        """The path, the query and the form with ``value`` in every parameter and field."""
        path = self.path
        query: dict[str, str] = {}
        for param in self.parameters:
            if param["in"] == "path":
                path = path.replace("{" + param["name"] + "}", value)
            elif param["in"] == "query":
                query[param["name"]] = value
        form = {name: value for name in (self.form or {}).get("properties", {})}
        return path, query, form

    def statuses(self) -> set[str]:
        return set(
            _document(self.document)["paths"][self.path.removeprefix(DOCUMENTS[self.document])][self.method][
                "responses"
            ]
        )


def _resolve(document: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        target: Any = document
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


@functools.cache
def _document(name: str) -> dict[str, Any]:
    """The document, parsed once a process (a walk asks for it for every operation): read it, never change it."""
    loaded: dict[str, Any] = safe_load(spec_path(name).read_text(encoding="utf-8"))
    return loaded


def operations() -> Iterator[Operation]:
    for name, prefix in DOCUMENTS.items():
        document = _document(name)
        for template, item in document["paths"].items():
            shared = [_resolve(document, p) for p in item.get("parameters", [])]
            for method in METHODS:
                if method not in item:
                    continue
                operation = item[method]
                parameters = shared + [_resolve(document, p) for p in operation.get("parameters", [])]
                content = _resolve(document, operation.get("requestBody", {})).get("content", {})
                media = content.get("application/x-www-form-urlencoded")
                form = _resolve(document, media["schema"]) if media else None
                if form is not None:
                    properties = {k: _resolve(document, v) for k, v in form.get("properties", {}).items()}
                    form = {**form, "properties": properties}
                yield Operation(name, method, prefix + template, parameters, form)


def documented_responses() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(document, "METHOD path status", response) for every response of every operation, references resolved."""
    for name in DOCUMENTS:
        document = _document(name)
        for template, item in document["paths"].items():
            for method in METHODS:
                for status, response in item.get(method, {}).get("responses", {}).items():
                    resolved = _resolve(document, response)
                    headers = {k: _resolve(document, v) for k, v in resolved.get("headers", {}).items()}
                    yield name, f"{method.upper()} {template} {status}", {**resolved, "headers": headers}
