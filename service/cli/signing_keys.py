"""``regional-menus keys``: the ID token and access token signing keys."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from identity.common.clock import SYSTEM_CLOCK
from service.cli.common import database_option, environment_settings, json_option, output, sealer, table

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from identity.keys.signing_keys import SigningKeys


KEY_HEADERS = ["KID", "STATE", "SIGNS FROM"]


@click.group("keys", short_help="Rotate and list the token signing keys.")
def keys_group() -> None:
    """Rotate and list the ID token and access token signing keys."""


def _signing_keys(engine: Engine) -> SigningKeys:
    from identity.provider import signing_keys_of

    settings = environment_settings()
    return signing_keys_of(engine, settings.lifetimes(), settings.tuning(), sealer(engine))


@keys_group.command("rotate", short_help="Publish a new signing key now.")
@json_option
@database_option
def keys_rotate(as_json: bool, engine: Engine) -> None:
    """Publish a new key now; it signs after MENUS_KEY_PUBLISH_DELAY seconds, when the current key retires."""
    info = _signing_keys(engine).rotate()
    at = SYSTEM_CLOCK.now()
    output(as_json, info.as_dict(at), table(KEY_HEADERS, [[info.kid, info.state(at), info.signs_from.isoformat()]]))


@keys_group.command("list", short_help="List signing keys and their states.")
@json_option
@database_option
def keys_list(as_json: bool, engine: Engine) -> None:
    """List signing keys and their states (published, signing, retired, expired)."""
    at = SYSTEM_CLOCK.now()
    infos = _signing_keys(engine).list()
    rows = [[i.kid, i.state(at), i.signs_from.isoformat()] for i in infos]
    output(as_json, [i.as_dict(at) for i in infos], table(KEY_HEADERS, rows))
