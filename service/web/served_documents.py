"""How the OpenAPI documents are served: the authored document (read by ``contracts.py``) in two forms.

Connexion would serve its resolved copy of a document (every ``$ref`` inlined: a generator then makes a class per
use of a schema); ``ServedDocument`` is the authored document instead, with ``servers`` set from the settings.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import orjson
import yaml

from service.web.contracts import Contract


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
        as_json = bytes(memoryview(orjson.dumps(document)))  # a copy: orjson's bytes keep their whole buffer
        json = Representation(lambda: as_json, "application/json")
        json.etag  # noqa: B018  # computed now, with the body
        return cls(
            json=json,
            yaml=Representation(
                lambda: yaml.safe_dump(orjson.loads(as_json), sort_keys=False, allow_unicode=True, width=120).encode(),
                "application/yaml",
            ),
        )
