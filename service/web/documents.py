"""Where the OpenAPI documents live, whether run from a checkout or installed, what they declare, how they are served.

Connexion would serve its resolved copy of a document (every ``$ref`` inlined: a generator then makes a class per
use of a schema); ``ServedDocument`` is the authored document instead, with ``servers`` set from the settings.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
import yaml

METHODS = ("get", "head", "put", "post", "delete", "patch")


def spec_path(name: str) -> Path:
    return Path(str(resources.files("openapi") / name))


def declared_methods(name: str, base_path: str) -> Callable[[str], list[str]]:
    """A function giving the methods document ``name`` declares for a request path (for ``Allow``)."""
    routes = _routes(name, base_path)

    def methods(path: str) -> list[str]:
        for pattern, allowed in routes:
            if pattern.fullmatch(path):
                return allowed
        return []

    return methods


@lru_cache(maxsize=8)
def _routes(name: str, base_path: str) -> list[tuple[re.Pattern[str], list[str]]]:
    with open(spec_path(name), encoding="utf-8") as stream:
        paths = yaml.safe_load(stream)["paths"]
    routes = []
    for template, operations in paths.items():
        pattern = re.compile(re.escape(base_path) + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)))
        methods = [m.upper() for m in METHODS if m in operations]
        if "GET" in methods and "HEAD" not in methods:
            methods.insert(1, "HEAD")  # Starlette and Flask answer HEAD wherever GET is
        routes.append((pattern, methods))
    return routes


class _AsWritten(yaml.SafeLoader):
    """YAML as written: a date-like scalar stays the string the author wrote (YAML 1.1 would make a datetime)."""


_AsWritten.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def authored(name: str) -> dict[str, Any]:
    """Document ``name`` exactly as its author wrote it: components and every ``$ref`` intact."""
    with open(spec_path(name), encoding="utf-8") as stream:
        document: dict[str, Any] = yaml.load(stream, Loader=_AsWritten)  # noqa: S506 (a SafeLoader)
    return document


def with_server(document: dict[str, Any], url: str) -> dict[str, Any]:
    """The document with its one server's URL set to ``url`` (the description, if any, is kept)."""
    first = (document.get("servers") or [{}])[0]
    return {**document, "servers": [{**first, "url": url}]}


@dataclass(frozen=True)
class Representation:
    body: bytes
    media_type: str
    etag: bytes  # strong: a digest of the exact bytes


@dataclass(frozen=True)
class ServedDocument:
    """One API's document as served: the authored document, ``servers`` filled from the settings, in two forms."""

    json: Representation
    yaml: Representation

    @classmethod
    def build(cls, name: str, server_url: str) -> ServedDocument:
        document = with_server(authored(name), server_url)
        as_json = orjson.dumps(document)
        as_yaml = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=120).encode()
        return cls(
            json=Representation(as_json, "application/json", _strong_etag(as_json)),
            yaml=Representation(as_yaml, "application/yaml", _strong_etag(as_yaml)),
        )


def _strong_etag(body: bytes) -> bytes:
    return b'"' + hashlib.blake2b(body, digest_size=16).hexdigest().encode() + b'"'
