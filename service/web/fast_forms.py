"""A form read without Starlette's parser and jsonschema, where the contract lets a plain check prove it valid.

Clients ask for tokens and introspect them over and over (RFC 6749 §4.4, RFC 7662 §2.1): the same small form
with its client credentials. Connexion's form validation (``service.web.contract_validators.ContractForm``) parses
such a body with Starlette's parser and validates it with a fresh JSON Schema validator; the handler then parses
it a second time, with every pair as sent. ``FormRules`` is worked out once from an operation's form schema when
every field is a string with, at most, length bounds and a pattern (RFC 6749 Appendix A's character classes:
VSCHAR, NQCHAR). A body it accepts is one the contract accepts, read into the pairs Starlette's parser reads; the
validator then skips its own parse and check, and the handler takes the pairs as they are (``request_state.FORM``).

Accepted: ``name=value`` pairs joined by ``&``, each name once, every declared field within its bounds and of its
pattern, its required fields present, no control character anywhere (``without_controls``,
service/web/request_reading.py) and, where the operation is strict, no undeclared name. Anything else goes to
Connexion's parser and the contract's rules, which decide and word the answer: this check can only skip work,
never change an answer (tests/api/test_form_parsers.py sends generated bodies through both and compares).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

from identity.common.text import has_control

Pairs = list[tuple[str, str]]
_UNBOUNDED = (0, 2**31)
_RULES = frozenset({"minLength", "maxLength", "pattern"})
_IGNORED = frozenset({"description", "example", "title"})
_OBJECT = frozenset({"type", "properties", "required"})
# Connexion hands its validators the schema with the document's components beside it (``with_definitions`` in
# connexion/operations/openapi.py), for references it has already resolved in the properties: not a rule.
_ATTACHED = frozenset({"components"})


@dataclass(frozen=True, slots=True)
class FormRules:
    """An operation's form as the contract declares it, when every field is a bounded string."""

    required: frozenset[str]
    declared: frozenset[str]
    bounds: Mapping[str, tuple[int, int]]  # field: (minLength, maxLength)
    patterns: Mapping[str, re.Pattern[str]]  # field: its pattern, matched as jsonschema does (``search``)
    strict: bool  # undeclared fields are refused (Connexion's strict validation)

    @classmethod
    def of(cls, schema: Mapping[str, Any], *, strict: bool) -> FormRules | None:
        """The rules of the form ``schema`` (its references resolved, as Connexion hands it to its validators);
        None when a field is not a bounded string, or the schema has other rules."""
        if schema.get("type", "object") != "object" or not set(schema) <= _OBJECT | _IGNORED | _ATTACHED:
            return None
        bounds, patterns = {}, {}
        for name, field in schema.get("properties", {}).items():
            rules = {key: value for key, value in field.items() if key not in _IGNORED}
            if rules.pop("type", None) != "string" or not set(rules) <= _RULES:
                return None
            bounds[name] = (rules.get("minLength", 0), rules.get("maxLength", 2**31))
            if "pattern" in rules:
                patterns[name] = re.compile(rules["pattern"])
        return cls(frozenset(schema.get("required", ())), frozenset(bounds), bounds, patterns, strict)

    def pairs(self, body: bytes) -> Pairs | None:
        """The form's pairs as Starlette's form parser reads them, if the contract accepts the form; else None."""
        pairs: Pairs = []
        for part in body.split(b"&"):
            raw_name, equals, raw_value = part.partition(b"=")
            if not raw_name or not equals or b"=" in raw_value:
                return None  # not plain name=value: Starlette's parser decides what it means
            pairs.append((_unquoted(raw_name), _unquoted(raw_value)))
        names = {name for name, _ in pairs}
        if len(names) != len(pairs) or not self.required <= names or self.strict and not names <= self.declared:
            return None
        for name, value in pairs:
            low, high = self.bounds.get(name, _UNBOUNDED)
            if not low <= len(value) <= high or has_control(name) or has_control(value):
                return None
            pattern = self.patterns.get(name)
            if pattern is not None and pattern.search(value) is None:
                return None
        return pairs


def _unquoted(raw: bytes) -> str:
    """``unquote_plus`` of the Latin-1 text, as Starlette's parser reads a name or value; without ``+`` or ``%``
    it is the text itself (``unquote_plus`` returns it unchanged), so the call is skipped."""
    text = raw.decode("latin-1")
    return unquote_plus(text) if b"%" in raw or b"+" in raw else text
