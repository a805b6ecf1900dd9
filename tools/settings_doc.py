"""docs/operations.md's two settings tables, generated from the settings table (``service/settings/table.py``).

Each table is written between its two markers (``<!-- settings: variables -->`` … ``<!-- end of settings:
variables -->``, and the same for ``fixed``); the text around them is the docs' own. ``tests/unit/test_settings.py``
fails when the docs and the table differ.

    python -m tools.settings_doc            # write the tables into docs/operations.md
    python -m tools.settings_doc --check    # exit 1, naming the file, when they are not what the table says
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from service.settings import Settings
from service.settings.rows import Entry, rows

OPERATIONS_MD = Path(__file__).parents[1] / "docs" / "operations.md"


def _begin(name: str) -> str:
    return f"<!-- settings: {name} (python -m tools.settings_doc writes this table from service/settings/table.py) -->"


def _end(name: str) -> str:
    return f"<!-- end of settings: {name} -->"


def _shown(entry: Entry) -> str:
    """A variable's default as an operator writes it."""
    if entry.row.shown is not None:
        return entry.row.shown
    value = entry.default
    if isinstance(value, bool):
        return "`on`" if value else "`off`"
    if isinstance(value, tuple):
        return ", ".join(f"`{each}`" for each in value) or "none"
    return f"`{value}`" if value != "" else "none"


def variables_table() -> str:
    """The settings a ``MENUS_*`` variable sets: its default, the values it takes, what it is for."""
    lines = ["| Variable | Default | Accepted | Meaning |", "|---|---|---|---|"]
    for entry in rows(Settings):
        if entry.row.variable is not None and entry.row.grammar is not None:
            accepted = entry.row.grammar.accepts
            lines.append(f"| `{entry.row.variable}` | {_shown(entry)} | {accepted} | {entry.row.description} |")
    return "\n".join(lines)


def fixed_table() -> str:
    """The settings no variable sets: their type, their default (as Python writes it), what they are for."""
    lines = ["| Setting | Type | Default | What for |", "|---|---|---|---|"]
    for entry in rows(Settings):
        if entry.row.variable is None:
            lines.append(f"| `{entry.name}` | `{entry.type}` | `{entry.default!r}` | {entry.row.description} |")
    return "\n".join(lines)


TABLES: dict[str, Callable[[], str]] = {"variables": variables_table, "fixed": fixed_table}


def regenerated(text: str) -> str:
    """``text`` (docs/operations.md) with each table between its markers written from the settings table."""
    for name, table in TABLES.items():
        begin, end = _begin(name), _end(name)
        before, found, rest = text.partition(begin + "\n")
        if not found or end not in rest:
            raise ValueError(f"docs/operations.md has no markers for the {name} settings ({begin} … {end})")
        text = before + begin + "\n" + table() + "\n" + end + rest.split(end, 1)[1]
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.settings_doc", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether the docs are what the table says")
    arguments = parser.parse_args(argv)
    text = OPERATIONS_MD.read_text(encoding="utf-8")
    wanted = regenerated(text)
    if wanted == text:
        return 0
    if arguments.check:
        print(
            f"{OPERATIONS_MD.name}: the settings tables differ from service/settings/table.py; "
            "run python -m tools.settings_doc",
            file=sys.stderr,
        )
        return 1
    OPERATIONS_MD.write_text(wanted, encoding="utf-8")
    print(f"wrote the settings tables of {OPERATIONS_MD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
