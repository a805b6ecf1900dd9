"""The route template of a request path, for metrics and logs: ``/v1/menus/dishes/{slug}``, never the raw path.

A label per raw path would give Prometheus a new series for every slug, every typo and every probe a
scanner sends; templates keep the number of series fixed by the contracts. A path that no contract
declares is ``unmatched``. Each API's own document and Swagger UI are routes too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from service.web.contracts import contract, template_pattern

UNMATCHED = "unmatched"


class RouteTemplates:
    """Maps a request path to its template; built from ``(document, base path, document prefix)`` triples."""

    def __init__(self, apis: Iterable[tuple[str, str, str]], *, cached_paths: int) -> None:
        """``cached_paths``: distinct raw paths whose template is remembered (bounded: clients choose paths)."""
        self._exact: dict[str, str] = {}
        self._patterns: list[tuple[re.Pattern[str], str]] = []
        self._prefixes: list[tuple[str, str]] = []  # Swagger UI: the page and its assets
        for document, base_path, document_prefix in apis:
            for template in contract(document).templates:
                full = base_path + template
                if "{" in template:
                    self._patterns.append((template_pattern(full), full))
                else:
                    self._exact[full] = full
            for document_path in (f"{document_prefix}/openapi.json", f"{document_prefix}/openapi.yaml"):
                self._exact[document_path] = document_path
            self._prefixes.append((f"{document_prefix}/ui", f"{document_prefix}/ui/"))
        self.template = lru_cache(maxsize=cached_paths)(self._template)

    def _template(self, path: str) -> str:
        exact = self._exact.get(path)
        if exact is not None:
            return exact
        for pattern, template in self._patterns:
            if pattern.fullmatch(path):
                return template
        for prefix, template in self._prefixes:
            if path == prefix or path.startswith(prefix + "/"):
                return template
        return UNMATCHED
