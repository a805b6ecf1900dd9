"""What a validator or a framework says, which no answer of the service may say (docs/security.md): jsonschema's
and Connexion's validation messages, Starlette's and Werkzeug's error texts, Python's tracebacks."""

from __future__ import annotations

import re

PHRASES = [
    "is not of type",  # jsonschema
    "is less than the minimum",
    "is greater than the maximum",
    "' is too long",
    "' is too short",
    "' does not match '",
    "is a required property",
    "is not one of [",
    "additional properties",
    "is not valid under any of the given schemas",
    "requestbody is required",  # Connexion
    "parsed body must be a mapping",
    "extra query parameter",
    "extra formdata parameter",
    "not in spec",
    "missing query parameter",
    "wrong type, expected",
    "invalid content-type",
    "traceback (most recent call last)",  # Python
    "werkzeug",
    "starlette",
    "connexion",
    "jsonschema",
    "internal server error",  # Starlette's and Werkzeug's bare texts
]
_FOUND = re.compile("|".join(re.escape(phrase) for phrase in PHRASES))


def framework_words(text: str) -> str | None:
    """The first validator or framework phrase in ``text`` (case-insensitive), or None."""
    found = _FOUND.search(text.lower())
    return found.group(0) if found else None
