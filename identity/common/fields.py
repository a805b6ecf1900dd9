"""Request parameters and form fields, each name sent at most once.

RFC 6749 §3.1 and §3.2: request parameters "MUST NOT be included more than once"; the token, introspection
and revocation endpoints, the password-reset form and the console's forms and sign-in answer hold to it.
"""

from __future__ import annotations

from collections.abc import Iterable


class RepeatedField(ValueError):
    """A name was sent more than once; ``name`` says which (safe to show: it is one the client sent)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def once_each(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The pairs as a dict; raise RepeatedField at the first name sent a second time."""
    fields: dict[str, str] = {}
    for name, value in pairs:
        if name in fields:
            raise RepeatedField(name)
        fields[name] = value
    return fields
