"""The races across nodes at their full counts (``python -m bench --only races``): attempts and outcomes.

The races of ``tests/support/races.py`` (which says what each fires and checks), each at ``FULL`` attempts (or
``--attempts``), on two nodes over one throw-away PostgreSQL database (on the server of ``MENUS_TEST_POSTGRES_URL``,
as the tests make theirs; default 127.0.0.1:5432, user postgres, database test) and on one SQLite node. It reports
figures and asserts nothing: ``tests/system/test_races.py`` runs fewer attempts in CI and asserts the rules.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from tests.support import races

FULL = {"reset": 40, "console": 20, "disable": 20, "consent-twice": 20, "consent-scopes": 20, "renewal": 20}


def runs(attempts: int | None, engines: tuple[str, ...] = ("postgresql", "sqlite")) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for engine_name in engines:
        with tempfile.TemporaryDirectory(prefix="bench-races-") as folder:
            with races.deployment(engine_name, races.folder_for(Path(folder), engine_name)) as deployment:
                results[engine_name] = {}
                for race, count in FULL.items():
                    tally = races.run(race, deployment, attempts or count)
                    print(tally.line(), flush=True)
                    results[engine_name][race] = {"attempts": tally.attempts, "outcomes": dict(tally.outcomes)}
    return results


def main(out: Path, attempts: int | None) -> None:
    results = runs(attempts)
    path = out / "races.json"
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")
