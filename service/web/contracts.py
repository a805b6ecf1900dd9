"""The OpenAPI documents, parsed once per process.

Every app the factory builds (and every test that builds one) needs the three documents: Connexion
for its routes and validators, the route templates for metrics, the menus gate for a parameter bound.
Parsing them is most of an app's start-up, so each is parsed once, with LibYAML where PyYAML has it,
and handed out as a deep copy wherever the receiver may change it (Connexion fills in defaults).
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import yaml

from service.web.documents import spec_path

# LibYAML's parser when PyYAML was built with it (the wheels are): the same documents, parsed ten times faster.
SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def document(name: str) -> dict[str, Any]:
    """The parsed document ``name`` of ``openapi/``; shared: read it, never change it."""
    with open(spec_path(name), encoding="utf-8") as stream:
        parsed: dict[str, Any] = yaml.load(stream, Loader=SafeLoader)  # noqa: S506 (a safe loader)
    return parsed


def specification(name: str) -> dict[str, Any]:
    """A copy of document ``name`` for Connexion's ``add_api``, which changes what it is given."""
    return copy.deepcopy(document(name))
