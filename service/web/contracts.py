"""One ``Contract`` per OpenAPI document of ``openapi/``, parsed once per process.

Every reader of a document asks its contract: Connexion for the specification it routes and
validates by, the metrics for the route templates, the error handlers for the methods a path
allows (``Allow``, RFC 9110 §10.2.1), the menus gate for a parameter's bound, the documentation
for the document it serves, and whoever needs an operation's ``x-`` extension for that operation.
Parsing is most of an app's start-up and tests build many apps, so ``contract(name)`` parses each
document once (``authored``: as written, with LibYAML), wherever the documents live (a checkout or an
installed package).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

try:
    from yaml import CSafeLoader as _Loader  # LibYAML (the wheels have it): ten times faster
except ImportError:  # pragma: no cover - a PyYAML built without LibYAML
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]


def spec_path(name: str) -> Path:
    return Path(str(resources.files("openapi") / name))


class _AsWritten(_Loader):
    """YAML as written: a date-like scalar stays the string the author wrote (YAML 1.1 would make a datetime)."""


_AsWritten.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def authored(name: str) -> dict[str, Any]:
    """Document ``name`` exactly as its author wrote it: components and every ``$ref`` intact.

    Parses the file on every call: the service asks ``contract(name)``, which keeps one parse.
    """
    with open(spec_path(name), encoding="utf-8") as stream:
        document: dict[str, Any] = yaml.load(stream, Loader=_AsWritten)  # noqa: S506 (a SafeLoader)
    return document


METHODS = ("get", "head", "put", "post", "delete", "patch")  # the HTTP methods an OpenAPI path item may declare


@dataclass(frozen=True, eq=False)
class Contract:
    """One OpenAPI document and what it declares. Shared: read it, never change what it hands out. One object per
    document and process (``contract``), so it is equal to itself alone and hashed by identity (a cache key)."""

    name: str  # e.g. "menus.yaml"
    document: Mapping[str, Any]  # the document as written: components and every ``$ref`` intact

    @cached_property
    def templates(self) -> list[str]:
        """The path templates, in the document's order (``/menus/dishes/{slug}``)."""
        return list(self.document["paths"])

    def operation(self, method: str, template: str) -> Mapping[str, Any]:
        """The operation object of ``method`` on ``template``, extensions (``x-…``) included; KeyError if none."""
        operation: Mapping[str, Any] = self.document["paths"][template][method.lower()]
        return operation

    def methods(self, template: str) -> list[str]:
        """The methods ``template`` allows, HEAD wherever GET is (Starlette answers HEAD for every GET route)."""
        item = self.document["paths"][template]
        methods = [m.upper() for m in METHODS if m in item]
        if "GET" in methods and "HEAD" not in methods:
            methods.insert(1, "HEAD")
        return methods

    def template_of(self, base_path: str) -> Callable[[str], str | None]:
        """A function giving the template a request path under ``base_path`` matches (None when none does)."""
        routes = [(template_pattern(base_path + template), template) for template in self.templates]

        def template(path: str) -> str | None:
            for pattern, matched in routes:
                if pattern.fullmatch(path):
                    return matched
            return None

        return template

    def allowed_methods(self, base_path: str) -> Callable[[str], list[str]]:
        """A function giving the methods allowed on a request path under ``base_path`` ([] when none matches)."""
        template_of = self.template_of(base_path)
        methods = {template: self.methods(template) for template in self.templates}

        def allowed(path: str) -> list[str]:
            template = template_of(path)
            return methods[template] if template is not None else []

        return allowed

    def parameter(self, name: str) -> Mapping[str, Any]:
        """The shared parameter ``components.parameters[name]`` (its schema holds the contract's limits)."""
        parameter: Mapping[str, Any] = self.document["components"]["parameters"][name]
        return parameter

    def specification(
        self, *, without_response_headers: Collection[str] = (), routed_first: Sequence[str] = ()
    ) -> dict[str, Any]:
        """A copy of the document for Connexion's ``add_api`` (which changes what it is given).

        ``without_response_headers`` (lower case): response headers left out of the copy, for headers
        that a layer outside Connexion adds after its response validation has run (the menus gate's).
        ``routed_first``: paths put first in the copy, in this order. Connexion adds a route per operation
        in the document's order, and Starlette's router tries them in turn until one matches the path in
        full: a request to a path near the end pays a failed match for every route before it. Each of
        these must be a path no other path of the document matches (no template, and no template of
        another matching it: checked, ValueError), so that the order changes which route answers no path.
        The copy is Connexion's alone: the served document stays the one written (``served``)."""
        specification = copy.deepcopy(dict(self.document))
        if routed_first:
            paths = specification["paths"]
            for path in routed_first:
                others = [t for t in paths if t != path and template_pattern(t).fullmatch(path)]
                if path not in paths or "{" in path or others:
                    raise ValueError(f"{path!r} cannot be routed first: {others or 'not a plain path of ' + self.name}")
            specification["paths"] = {**{path: paths[path] for path in routed_first}, **paths}
        if without_response_headers:
            responses = [
                response
                for item in specification["paths"].values()
                for method in METHODS
                for response in item.get(method, {}).get("responses", {}).values()
            ]
            responses += specification.get("components", {}).get("responses", {}).values()
            for response in responses:
                if "headers" in response:
                    response["headers"] = {
                        name: header
                        for name, header in response["headers"].items()
                        if name.lower() not in without_response_headers
                    }
        return specification

    def served(self, server_url: str) -> dict[str, Any]:
        """The document as served: as written, its one server's URL set to ``server_url`` (description kept)."""
        first = (self.document.get("servers") or [{}])[0]
        return {**self.document, "servers": [{**first, "url": server_url}]}


def template_pattern(template: str) -> re.Pattern[str]:
    """A path template as a pattern: each ``{name}`` matches one non-empty path segment."""
    return re.compile(re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)))


@cache
def contract(name: str) -> Contract:
    """The contract of document ``name`` of ``openapi/``, parsed on first use."""
    return Contract(name, authored(name))
