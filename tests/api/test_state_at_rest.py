"""State at rest: signing keys and service secrets sealed with MENUS_SECRET_KEYS (else the key file), the
state folder and database file private to the user, rotation and a wrong key's error."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.common.clock import SYSTEM_CLOCK
from identity.common.tables import signing_keys
from identity.keys.sealing import Sealer, SealingError, new_key
from service.cli.commands import main
from service.database.db import make_engine, service_secret, service_secrets, sqlite_file
from service.database.sealing_keys import load_sealer, reseal
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.defaults import POOL

# State files: ./var/ 0700, the SQLite database 0600


def test_state_folder_is_private_to_the_user_and_the_database_file_too(tmp_path: Path) -> None:
    database = tmp_path / "var" / "regional-menus.sqlite3"
    engine = make_engine(f"sqlite:///{database}", POOL)
    with engine.connect() as connection:
        connection.exec_driver_sql("CREATE TABLE t (x INTEGER)")
        connection.commit()
    engine.dispose()
    assert stat.S_IMODE(database.parent.stat().st_mode) == 0o700
    for path in database.parent.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


# Secrets at rest: signing keys and service secrets sealed with MENUS_SECRET_KEYS (else the key file)


def stored_bytes(database: Path) -> bytes:
    """Everything SQLite keeps on disk for the database: the file, its WAL and its shared memory."""
    return b"".join(path.read_bytes() for path in database.parent.glob(database.name + "*"))


def sealed_rows(database_url: str) -> tuple[list[str], list[bytes]]:
    engine = make_engine(database_url, POOL)
    with engine.connect() as connection:
        pems = list(connection.scalars(sa.select(signing_keys.c.private_pem)))
        secrets = [bytes(value) for value in connection.scalars(sa.select(service_secrets.c.value))]
    engine.dispose()
    return pems, secrets


def database_file(database_url: str) -> Path:
    path = sqlite_file(database_url)
    assert path is not None, database_url
    return path


def test_the_database_holds_no_pem_and_no_clear_service_secret(
    app: Any, http: TestClient, database_url: str, engine: Engine
) -> None:
    cursor_key = service_secret(engine, load_sealer((), database_url), "directory-cursor-key")
    assert http.get("/jwks").json()["keys"]
    pems, secrets = sealed_rows(database_url)
    assert pems and all(pem.startswith("gAAAAA") and "BEGIN" not in pem for pem in pems)
    assert secrets and all(value.startswith(b"gAAAAA") for value in secrets)
    on_disk = stored_bytes(database_file(database_url))
    assert b"PRIVATE KEY" not in on_disk and cursor_key not in on_disk


def test_without_secret_keys_a_key_file_is_made_once_beside_the_database_with_mode_0600(
    app: Any, database_url: str
) -> None:
    key_file = database_file(database_url).parent / "secret-keys"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text().split()
    assert len(key) == 1 and load_sealer((), database_url).open(sealed_rows(database_url)[1][0])
    assert key_file.read_text().split() == key  # read again, not made again


def test_rows_stored_in_clear_before_sealing_are_sealed_at_start_and_keep_working(
    settings: Settings, engine: Engine, database_url: str
) -> None:
    clear_pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    jwk = RSAAlgorithm.to_jwk(serialization.load_pem_private_key(clear_pem, None).public_key(), as_dict=True)
    with engine.begin() as connection:
        connection.execute(
            signing_keys.insert().values(
                kid="old-clear-key",
                private_pem=clear_pem.decode(),
                public_jwk={**jwk, "kid": "old-clear-key", "use": "sig", "alg": "RS256"},
                created_at=SYSTEM_CLOCK.now(),
                signs_from=SYSTEM_CLOCK.now(),
            )
        )
        connection.execute(service_secrets.insert().values(name="directory-cursor-key", value=b"c" * 32))

    with TestClient(make_app(settings)) as http:
        assert [key["kid"] for key in http.get("/jwks").json()["keys"]] == ["old-clear-key"]

    pems, secrets = sealed_rows(database_url)
    assert all(pem.startswith("gAAAAA") for pem in pems) and all(v.startswith(b"gAAAAA") for v in secrets)
    sealer = load_sealer((), database_url)
    assert sealer.open(pems[0].encode()) == clear_pem
    assert service_secret(engine, sealer, "directory-cursor-key") == b"c" * 32  # the same secret, now sealed
    assert reseal(engine, sealer, rotate=False).as_dict() == {"signing_keys": 0, "service_secrets": 0}


def test_secrets_rotate_seals_everything_again_with_the_first_key(tmp_path: Path) -> None:
    database_url = f"sqlite:///{tmp_path / 'state.sqlite3'}"
    old, new = new_key(), new_key()
    runner = CliRunner()
    for args, keys in (
        (["db", "upgrade"], old),
        (["keys", "rotate", "--json"], old),
        (["secrets", "rotate", "--json"], f"{new},{old}"),
    ):
        result = runner.invoke(main, [*args, "--database-url", database_url], env={"MENUS_SECRET_KEYS": keys})
        assert result.exit_code == 0, result.output
    assert '"signing_keys": 1' in result.output
    pems, _ = sealed_rows(database_url)
    assert Sealer([new]).open(pems[0].encode()).startswith(b"-----BEGIN PRIVATE KEY-----")
    with pytest.raises(SealingError):
        Sealer([old]).open(pems[0].encode())
    assert not (tmp_path / "secret-keys").exists()  # keys were given: no key file


def test_a_wrong_secret_key_is_a_clear_error_naming_the_setting_and_never_the_key(tmp_path: Path) -> None:
    database_url = f"sqlite:///{tmp_path / 'state.sqlite3'}"
    runner = CliRunner()
    for args, keys in ((["db", "upgrade"], new_key()), (["keys", "rotate"], new_key()), (["secrets", "rotate"], "k")):
        result = runner.invoke(main, [*args, "--database-url", database_url], env={"MENUS_SECRET_KEYS": keys})
    assert result.exit_code == 2 and "MENUS_SECRET_KEYS: key 1 is not 32 bytes" in result.output
    wrong = new_key()
    result = runner.invoke(
        main, ["secrets", "rotate", "--database-url", database_url], env={"MENUS_SECRET_KEYS": wrong}
    )
    assert result.exit_code == 2 and "does not open with any key of MENUS_SECRET_KEYS" in result.output
    assert wrong not in result.output
