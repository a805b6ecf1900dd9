"""Where the OpenAPI documents live, whether run from a checkout or installed, how they are read and served.

Connexion would serve its resolved copy of a document (every ``$ref`` inlined: a generator then makes a class per
use of a schema); ``ServedDocument`` is the authored document instead, with ``servers`` set from the settings.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import yaml

if TYPE_CHECKING:
    from service.web.contracts import Contract

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

    Parses the file on every call: the service asks ``service.web.contracts.contract(name)``, which keeps one parse.
    """
    with open(spec_path(name), encoding="utf-8") as stream:
        document: dict[str, Any] = yaml.load(stream, Loader=_AsWritten)  # noqa: S506 (a SafeLoader)
    return document


class Representation:
    """One form of a document: its bytes, made by ``render`` when first asked for, and their strong ETag."""

    def __init__(self, render: Callable[[], bytes], media_type: str) -> None:
        self._render = render
        self.media_type = media_type

    @cached_property
    def body(self) -> bytes:
        return self._render()

    @cached_property
    def etag(self) -> bytes:
        """Strong: a digest of the exact bytes."""
        return b'"' + hashlib.blake2b(self.body, digest_size=16).hexdigest().encode() + b'"'


@dataclass(frozen=True)
class ServedDocument:
    """One API's document as served: the authored document, ``servers`` filled from the settings, in two forms.

    The JSON is made at once; the YAML (PyYAML's emitter: about 0.15 s a document, three at every start) when it
    is first asked for, from the JSON's bytes: the same content, and nothing shared that could change since."""

    json: Representation
    yaml: Representation

    @classmethod
    def build(cls, contract: Contract, server_url: str) -> ServedDocument:
        document = contract.served(server_url)
        as_json = orjson.dumps(document)
        json = Representation(lambda: as_json, "application/json")
        json.etag  # noqa: B018  # computed now, with the body
        return cls(
            json=json,
            yaml=Representation(
                lambda: yaml.safe_dump(orjson.loads(as_json), sort_keys=False, allow_unicode=True, width=120).encode(),
                "application/yaml",
            ),
        )
