"""The schema's migrations (service/database/migrations/), on SQLite and PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from identity.api_keys.keys import ApiKeyStore, hash_key
from service.database.db import make_engine, metadata
from service.database.schema import (
    VERSION_TABLE,
    SchemaOutOfDate,
    alembic_config,
    current,
    head,
    load_tables,
    require_current,
    upgrade,
)
from tests.support.defaults import POOL
from tests.support.postgres import throwaway_database


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[sa.Engine]:
    """An engine on a database without any table."""
    if request.param == "sqlite":
        engine = make_engine(f"sqlite:///{tmp_path / 'empty.sqlite3'}", POOL)
        yield engine
        engine.dispose()
        return
    with throwaway_database(migrated=False) as url:
        engine = make_engine(url, POOL)
        yield engine
        engine.dispose()


def test_migrations_build_exactly_the_tables_the_code_defines(empty_engine: sa.Engine) -> None:
    upgrade(empty_engine)
    load_tables()
    with empty_engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection, opts={"compare_type": True}), metadata)
    assert differences == [], "a table changed without a migration: run `alembic revision --autogenerate`"


def schema_of(engine: sa.Engine) -> dict[str, object]:
    """Every table but Alembic's, with its columns, primary key, foreign keys, indexes and unique constraints."""
    inspector = sa.inspect(engine)
    return {
        table: (
            sorted(
                (column["name"], str(column["type"]), column["nullable"]) for column in inspector.get_columns(table)
            ),
            inspector.get_pk_constraint(table)["constrained_columns"],
            sorted(
                (tuple(key["constrained_columns"]), key["referred_table"], tuple(key["referred_columns"]))
                for key in inspector.get_foreign_keys(table)
            ),
            sorted(
                (str(index["name"]), tuple(map(str, index["column_names"])), bool(index["unique"]))
                for index in inspector.get_indexes(table)
            ),  # fmt: skip
            sorted(tuple(unique["column_names"]) for unique in inspector.get_unique_constraints(table)),
        )
        for table in inspector.get_table_names()
        if table != VERSION_TABLE
    }


def test_each_migrations_downgrade_undoes_it_exactly(empty_engine: sa.Engine) -> None:
    """Up one revision, down one, up again, from the first to the head: each downgrade gives back the schema the
    revision before it had (an operator's way back after a bad release, ``alembic downgrade -1``)."""
    config = alembic_config()
    revisions = [script.revision for script in ScriptDirectory.from_config(config).walk_revisions()][::-1]

    def migrate(step: Callable[[Config, str], None], target: str) -> None:
        with empty_engine.begin() as connection:
            config.attributes["connection"] = connection
            step(config, target)

    before = schema_of(empty_engine)
    assert len(revisions) >= 14 and before == {}
    for revision in revisions:
        migrate(command.upgrade, revision)
        after = schema_of(empty_engine)
        migrate(command.downgrade, "-1")
        assert schema_of(empty_engine) == before, f"the downgrade of {revision} left another schema"
        migrate(command.upgrade, revision)
        before = after
    assert current(empty_engine) == head()


def test_a_database_without_the_schema_is_refused_until_upgraded(empty_engine: sa.Engine) -> None:
    with pytest.raises(SchemaOutOfDate, match="no schema yet: run `regional-menus db upgrade`"):
        require_current(empty_engine)
    assert upgrade(empty_engine) == (None, head())
    require_current(empty_engine)
    assert upgrade(empty_engine) == (head(), head())  # nothing left to do


def test_upgrading_an_older_schema_keeps_its_rows(empty_engine: sa.Engine) -> None:
    config = alembic_config()
    with empty_engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
    key = "rmk_" + "k" * 43  # a key made before keys had owners: the table had no org_id then
    with empty_engine.begin() as connection:
        connection.execute(
            sa.text("INSERT INTO api_keys (id, name, key_hash, created_at) VALUES ('key_old', 'kept', :h, :at)"),
            {"h": hash_key(key), "at": datetime.now(UTC)},
        )
    with pytest.raises(SchemaOutOfDate, match=f"at revision 0001, this version needs {head()}"):
        require_current(empty_engine)
    assert upgrade(empty_engine) == ("0001", head())
    assert current(empty_engine) == head()
    assert ApiKeyStore(empty_engine).authenticate(key) == "key_old"  # old keys keep working
    (old,) = ApiKeyStore(empty_engine).list()
    assert (old.org_id, old.created_by, old.prefix) == (None, None, None)  # and belong to no organization


def test_consents_before_0004_are_kept_for_a_single_organization_and_dropped_otherwise(
    empty_engine: sa.Engine,
) -> None:
    """Migration 0004: a consent given before it can be attributed only when the user had one organization."""
    config = alembic_config()
    with empty_engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0003")
    now = datetime.now(UTC)
    rows = {
        "organizations": [("org_a", "A", "a"), ("org_b", "B", "b")],
        "users": [("usr_one", "one@example.com"), ("usr_two", "two@example.com")],
        "memberships": [("usr_one", "org_a"), ("usr_two", "org_a"), ("usr_two", "org_b")],
    }
    with empty_engine.begin() as connection:
        for org_id, name, slug in rows["organizations"]:
            connection.execute(
                sa.text("INSERT INTO organizations VALUES (:i, :n, :s, :at)"),
                {"i": org_id, "n": name, "s": slug, "at": now},
            )
        for user_id, email in rows["users"]:
            connection.execute(
                sa.text("INSERT INTO users VALUES (:i, :e, :e, 'N', 'x', :at)"), {"i": user_id, "e": email, "at": now}
            )
        for user_id, org_id in rows["memberships"]:
            connection.execute(
                sa.text("INSERT INTO memberships VALUES (:u, :o, 'member', :at)"),
                {"u": user_id, "o": org_id, "at": now},
            )
        connection.execute(
            sa.text(
                "INSERT INTO clients VALUES ('cli_x', 'org_a', 'X', NULL, 'client_secret_basic', NULL, '[]', '[]',"
                " '[]', '[]', false, true, :at)"
            ),
            {"at": now},
        )
        for user_id in ("usr_one", "usr_two"):
            connection.execute(
                sa.text("INSERT INTO consents VALUES (:u, 'cli_x', '[\"openid\"]', :at)"), {"u": user_id, "at": now}
            )
    upgrade(empty_engine)
    with empty_engine.connect() as connection:
        kept = connection.execute(sa.text("SELECT user_id, client_id, org_id FROM consents")).all()
        key = sa.inspect(connection).get_pk_constraint("consents")["constrained_columns"]
    assert [tuple(row) for row in kept] == [("usr_one", "cli_x", "org_a")]
    assert sorted(key) == ["client_id", "org_id", "user_id"]
    with empty_engine.begin() as connection:  # and back down: one consent per (user, client) again
        config.attributes["connection"] = connection
        command.downgrade(config, "0003")
        key = sa.inspect(connection).get_pk_constraint("consents")["constrained_columns"]
    assert sorted(key) == ["client_id", "user_id"]


def test_the_head_read_from_the_migration_files_is_alembics_head() -> None:
    from alembic.script import ScriptDirectory

    assert head() == ScriptDirectory.from_config(alembic_config()).get_current_head()


def test_checking_the_schema_at_start_up_imports_no_alembic(tmp_path: Path) -> None:
    """``require_current`` runs at every start: it reads the head and ``alembic_version`` without Alembic."""
    probe = (
        "import sys\n"
        "from service.database.db import make_engine\n"
        "from service.database.schema import require_current, upgrade\n"
        "from tests.support.defaults import POOL\n"
        f"engine = make_engine('sqlite:///{tmp_path / 'state.sqlite3'}', POOL)\n"
        "upgrade(engine)\n"
        "for name in [m for m in sys.modules if m == 'alembic' or m.startswith('alembic.')]:\n"
        "    del sys.modules[name]\n"
        "require_current(engine)\n"
        "print('alembic' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "False"
