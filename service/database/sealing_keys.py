"""The operator's keys for secrets at rest: ``MENUS_SECRET_KEYS``, else a key file made once beside the database.

``MENUS_SECRET_KEYS`` holds one or more Fernet keys (``regional-menus secrets new-key`` makes one), separated
by commas: the first seals, every one opens. Without it, the key is read from ``secret-keys`` in the SQLite
database's folder (``./var/secret-keys`` with the default database, and for any other database), which is
created on first use with one new key and mode 0600. Several nodes sharing a database must share the keys:
set ``MENUS_SECRET_KEYS`` on every node.

Start-up and ``secrets rotate`` call ``reseal``: rows stored in clear (a database from before sealing) are
sealed; ``secrets rotate`` also seals every row again with the first key, after which the other keys can go.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.common import audit
from identity.federation.sealed import reseal as reseal_federation
from identity.keys.resealing import reseal_column
from identity.keys.sealing import Sealer, new_key
from identity.keys.signing_keys import reseal_signing_keys
from service.database.db import private_file, service_secrets

KEY_FILE_NAME = "secret-keys"
DEFAULT_FOLDER = Path("var")  # for a database that is not a SQLite file


def key_file_for(database_url: str) -> Path:
    """Where the key file is when MENUS_SECRET_KEYS is unset: beside a SQLite database, else in ./var/."""
    parsed = sa.make_url(database_url)
    if parsed.get_backend_name() == "sqlite" and parsed.database and parsed.database != ":memory:":
        return Path(parsed.database).parent / KEY_FILE_NAME
    return DEFAULT_FOLDER / KEY_FILE_NAME


def load_sealer(secret_keys: tuple[str, ...], database_url: str) -> Sealer:
    """The sealer of the operator's keys, or of the key file (made with a new key when missing)."""
    if secret_keys:
        return Sealer(secret_keys)
    path = key_file_for(database_url)
    if not path.exists():
        _create_key_file(path)
    keys = path.read_text(encoding="ascii").split()
    if not keys:
        raise ValueError(f"the key file {path} holds no key")
    return Sealer(keys)


def _create_key_file(path: Path) -> None:
    """Write the file whole, then link it into place: a process starting at the same time reads one key or
    the other's, never half a file, and both end up with the one that was linked first."""
    draft = path.parent / f".{KEY_FILE_NAME}-{os.getpid()}"
    private_file(draft)  # the folder 0700 when it is new, the file 0600
    try:
        with draft.open("w", encoding="ascii") as file:
            file.write(new_key() + "\n")
            file.flush()
            os.fsync(file.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(draft, path)
    finally:
        draft.unlink(missing_ok=True)


@dataclass(frozen=True, slots=True)
class Resealed:
    signing_keys: int
    service_secrets: int
    federation: int = 0  # organizations' providers' client secrets, pending PKCE verifiers, providers' ID tokens

    def as_dict(self) -> dict[str, int]:
        counts = {"signing_keys": self.signing_keys, "service_secrets": self.service_secrets}
        return counts | ({"federation": self.federation} if self.federation else {})


def reseal(engine: Engine, sealer: Sealer, *, rotate: bool) -> Resealed:
    """Seal what is stored in clear; with ``rotate``, seal everything again with the first key.

    Idempotent and safe on several nodes at once: a row is replaced only if it still holds what was read.
    """
    keys = reseal_signing_keys(engine, sealer, rotate=rotate)
    secrets = reseal_column(engine, sealer, service_secrets.c.name, service_secrets.c.value, rotate=rotate)
    federation = reseal_federation(engine, sealer, rotate=rotate)
    if rotate:
        audit.record(audit.SECRETS_ROTATED)
    return Resealed(keys, secrets, federation)
