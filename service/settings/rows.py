"""One row per setting: the field of ``Settings`` it is (its name, its type), its default, the ``MENUS_*`` variable
that sets it with the grammar (and bounds) of its values, and one line saying what it is for.

``setting(...)`` writes a row as the default of a dataclass field, so the typed ``Settings`` is the table itself
(``service/settings/table.py``); ``rows(Settings)`` reads it back for ``Settings.from_env``, the tests and the
table of docs/operations.md (``python -m tools.settings_doc``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, TypeVar

from service.settings.grammars import Grammar

T = TypeVar("T")
_ROW = "row"  # the key of a field's metadata that holds its row


@dataclass(frozen=True, slots=True)
class Row:
    """What a field of ``Settings`` is for, and how a variable sets it."""

    description: str  # one line (Markdown: docs/operations.md shows it)
    variable: str | None = None  # the MENUS_* variable that sets it; None: fixed (create_app(Settings(...)) sets it)
    grammar: Grammar | None = None  # how the variable's text is read, bounds included; given with variable
    shown: str | None = None  # the default as the docs say it, where the value depends on where the service runs


def setting(
    default: T, description: str, *, env: str | None = None, grammar: Grammar | None = None, shown: str | None = None
) -> T:
    """A field of ``Settings``: its default, its row. ``env`` and ``grammar`` come together, or not at all."""
    return field(default=default, metadata={_ROW: _row(description, env, grammar, shown)})


def computed_setting(
    default: Callable[[], T],
    description: str,
    *,
    env: str | None = None,
    grammar: Grammar | None = None,
    shown: str,
) -> T:
    """A field whose default is computed when a ``Settings`` is made (``shown`` says what it is in the docs)."""
    return field(default_factory=default, metadata={_ROW: _row(description, env, grammar, shown)})


def _row(description: str, env: str | None, grammar: Grammar | None, shown: str | None) -> Row:
    if (env is None) != (grammar is None):
        raise TypeError(f"a setting read from the environment needs a variable and a grammar ({description!r})")
    if "\n" in description or not description:
        raise TypeError("a setting's description is one line")
    return Row(description, env, grammar, shown)


@dataclass(frozen=True, slots=True)
class Entry:
    """One setting as the table holds it."""

    name: str  # the field of Settings
    type: str  # its annotation (int, float, bool, str, tuple[str, ...])
    row: Row
    _field: Any  # the dataclass field: its default, or what computes it

    @property
    def default(self) -> Any:
        return self._field.default if self._field.default is not MISSING else self._field.default_factory()


def rows(settings_class: type) -> tuple[Entry, ...]:
    """The rows of ``settings_class`` (``Settings``) in the order they are written."""
    return tuple(Entry(each.name, str(each.type), each.metadata[_ROW], each) for each in fields(settings_class))
