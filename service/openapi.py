"""Where the OpenAPI documents live, whether run from a checkout or installed, and what they declare."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from importlib import resources
from pathlib import Path

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
