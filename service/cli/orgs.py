"""``regional-menus orgs``: organizations."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from service.cli.common import database_option, json_option, output, table

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


ORG_HEADERS = ["ID", "SLUG", "NAME"]


@click.group("orgs", short_help="Create and list organizations.")
def orgs_group() -> None:
    """Create and list organizations."""


@orgs_group.command("create", short_help="Create an organization.")
@click.option("--name", required=True, help="The organization's name.")
@json_option
@database_option
def orgs_create(name: str, as_json: bool, engine: Engine) -> None:
    """Create an organization."""
    from identity.accounts.organizations import OrganizationStore

    org = OrganizationStore(engine).create(name)
    output(as_json, org.as_dict(), table(ORG_HEADERS, [[org.id, org.slug, org.name]]))


@orgs_group.command("list", short_help="List organizations.")
@json_option
@database_option
def orgs_list(as_json: bool, engine: Engine) -> None:
    """List organizations (not the service's own, which owns the console's client)."""
    from identity.accounts.organizations import OrganizationStore
    from service.console_api.relying_party import SERVICE_ORG_ID

    orgs = [org for org in OrganizationStore(engine).list() if org.id != SERVICE_ORG_ID]
    output(as_json, [o.as_dict() for o in orgs], table(ORG_HEADERS, [[o.id, o.slug, o.name] for o in orgs]))
