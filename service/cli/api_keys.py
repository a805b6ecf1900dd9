"""``regional-menus api-keys``: the keys of the menus API."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from service.cli.common import database_option, fail, json_option, output, table
from service.settings import max_keys_per_org_from

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


@click.group("api-keys", short_help="Issue, list and revoke API keys of the menus API.")
def api_keys_group() -> None:
    """Issue, list and revoke API keys of the menus API."""


@api_keys_group.command("create", short_help="Create a key and print it once.")
@click.option("--name", required=True, help="Who or what the key is for.")
@click.option("--org", "org_id", default=None, help="The organization that owns the key (its console shows it).")
@json_option
@database_option
def api_keys_create(name: str, org_id: str | None, as_json: bool, engine: Engine) -> None:
    """Create a key and print it once; only its hash is kept. A key of --org enters the organization's audit trail
    (by the command line), as one made in the console does."""
    from identity.api_keys.keys import ApiKeyStore
    from identity.organizations import operator_keys

    keys = ApiKeyStore(engine, max_per_org=max_keys_per_org_from(os.environ))
    try:
        record, key = operator_keys.create(keys, name, org_id)  # a key of --org enters its trail
    except ValueError as error:  # KeyLimitReached too: the organization's active keys are at the cap
        fail(str(error))
    text = table(["ID", "NAME", "KEY (shown once)"], [[record.id, record.name, key]])
    output(as_json, {"id": record.id, "name": record.name, "key": key}, text)


@api_keys_group.command("list", short_help="List keys (never the keys themselves).")
@json_option
@database_option
def api_keys_list(as_json: bool, engine: Engine) -> None:
    """List keys (never the keys themselves)."""
    from identity.api_keys.keys import ApiKeyStore

    records = ApiKeyStore(engine).list()
    rows = [[r.id, r.name, "revoked" if r.revoked_at else "active"] for r in records]
    output(as_json, [r.as_dict() for r in records], table(["ID", "NAME", "STATE"], rows))


@api_keys_group.command("revoke", short_help="Revoke a key; it stops working at once.")
@click.argument("key_id")
@json_option
@database_option
def api_keys_revoke(key_id: str, as_json: bool, engine: Engine) -> None:
    """Revoke a key; it stops working at once (a key of an organization enters its audit trail, by the command
    line). A key already revoked stays so: exit 0, "already revoked", and no second audit line or trail entry."""
    from identity.api_keys.keys import ApiKeyStore, UnknownApiKey
    from identity.organizations import operator_keys

    try:  # the audit line and the organization's trail entry only if it revoked the key now
        record, already = operator_keys.revoke(ApiKeyStore(engine), key_id)
    except UnknownApiKey:
        fail(f"no API key has the id {key_id!r}")
    state = f"already revoked ({record.revoked_at:%Y-%m-%d %H:%M} UTC)" if already else "revoked"
    document = {**record.as_dict(), "already_revoked": already}
    output(as_json, document, table(["ID", "NAME", "STATE"], [[record.id, record.name, state]]))
