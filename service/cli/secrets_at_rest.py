"""``regional-menus secrets``: signing keys and service secrets at rest, sealed with MENUS_SECRET_KEYS."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from service.cli.common import BadInput, database_option, json_option, output, sealer

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


@click.group("secrets", short_help="Keys and secrets at rest: seal them again.")
def secrets_group() -> None:
    """Signing keys and service secrets at rest: sealed with MENUS_SECRET_KEYS (else the key file)."""


@secrets_group.command("rotate", short_help="Seal every key and secret with the first key.")
@json_option
@database_option
def secrets_rotate(as_json: bool, engine: Engine) -> None:
    """Seal every signing key and service secret again with the first key of MENUS_SECRET_KEYS.

    Rows still in clear (a database from before sealing) are sealed too. Afterwards, the other keys can be
    removed from MENUS_SECRET_KEYS. Safe to run while the service runs, and to run again.
    """
    from identity.keys.sealing import SealingError
    from service.database.sealing_keys import reseal

    try:
        done = reseal(engine, sealer(engine), rotate=True)
    except SealingError as error:
        raise BadInput(str(error)) from None
    text = f"sealed with the first key: {done.signing_keys} signing keys, {done.service_secrets} service secrets"
    output(as_json, done.as_dict(), text)


@secrets_group.command("new-key", short_help="Print a new key for MENUS_SECRET_KEYS.")
@json_option
def secrets_new_key(as_json: bool) -> None:
    """Print a new key for MENUS_SECRET_KEYS (put it first to seal with it; keep the old ones after it)."""
    from identity.keys.sealing import new_key

    key = new_key()
    output(as_json, {"key": key}, key)
