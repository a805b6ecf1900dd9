"""``regional-menus orgs``: organizations."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from identity.common.vocabulary import ROLES
from service.cli.common import database_option, environment_settings, fail, json_option, output, sealer, table

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


ORG_HEADERS = ["ID", "SLUG", "NAME"]


@click.group("orgs", short_help="Organizations, their email domains and identity providers.")
def orgs_group() -> None:
    """Create and list organizations; confirm the email domains they claim; register their own OpenID providers."""


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


DOMAIN_HEADERS = ["DOMAIN", "ORG", "CLAIMED"]


@orgs_group.command("claim-domain", short_help="Confirm that an organization may claim a domain.")
@click.argument("org_id", metavar="ORG")
@click.argument("domain")
@json_option
@database_option
def orgs_claim_domain(org_id: str, domain: str, as_json: bool, engine: Engine) -> None:
    """Confirm, once, that ORG may claim DOMAIN: addresses in it then sign in at ORG's own identity provider (when
    ORG has a connection). No two organizations hold one domain; claiming it again for ORG changes nothing."""
    from identity.federation.domains import DomainClaims

    claimed = DomainClaims(engine).claim(org_id, domain)
    output(as_json, claimed.as_dict(), table(DOMAIN_HEADERS, [[claimed.domain, claimed.org_id, claimed.claimed_at]]))


@orgs_group.command("release-domain", short_help="Withdraw an organization's claim of a domain.")
@click.argument("org_id", metavar="ORG")
@click.argument("domain")
@json_option
@database_option
def orgs_release_domain(org_id: str, domain: str, as_json: bool, engine: Engine) -> None:
    """Withdraw ORG's claim of DOMAIN: its addresses sign in with passwords again (accounts stay bound)."""
    from identity.federation.domains import DomainClaims

    released = DomainClaims(engine).release(org_id, domain)
    output(as_json, {"released": released}, "released" if released else "ORG did not claim DOMAIN")


@orgs_group.command("domains", short_help="List the claimed email domains.")
@click.option("--org", "org_id", default=None, help="Only this organization's.")
@json_option
@database_option
def orgs_domains(org_id: str | None, as_json: bool, engine: Engine) -> None:
    """List the email domains organizations claim."""
    from identity.federation.domains import DomainClaims

    claims = DomainClaims(engine)
    found = claims.of(org_id) if org_id else claims.all()
    rows = [[c.domain, c.org_id, c.claimed_at] for c in found]
    output(as_json, [c.as_dict() for c in found], table(DOMAIN_HEADERS, rows))


@orgs_group.command("connect", short_help="Register an organization's own OpenID provider.")
@click.argument("org_id", metavar="ORG")
@click.option("--issuer", required=True, help="The provider's issuer; its discovery document is fetched and checked.")
@click.option("--client-id", required=True, help="Our client id at the provider.")
@click.option("--client-secret-stdin", is_flag=True, help="Read our client secret at the provider from standard input.")
@click.option("--scope", "scopes", multiple=True, help="A scope to ask for; repeat for several (openid email profile).")
@click.option("--default-role", type=click.Choice(ROLES), default="member", show_default=True)
@click.option("--sso-required/--sso-optional", default=False, help="Whether members' passwords stop signing them in.")
@click.option("--domain", "domains", multiple=True, help="A claimed domain it covers; repeat for several (every one).")
@json_option
@database_option
def orgs_connect(
    org_id: str,
    issuer: str,
    client_id: str,
    client_secret_stdin: bool,
    scopes: tuple[str, ...],
    default_role: str,
    sso_required: bool,
    domains: tuple[str, ...],
    as_json: bool,
    engine: Engine,
) -> None:
    """Register (or change) ORG's connection to its own OpenID provider, as an owner does in the console (and with
    an entry in ORG's audit trail, by the command line). The secret is sealed at rest; without --client-secret-stdin
    the stored one is kept. Without --domain it covers every domain ORG claims. Prints the URIs to register at the
    provider."""
    from identity.common.outbound_uris import OutboundRule
    from identity.federation.administration import ConnectionAdministration, Endpoints
    from identity.federation.connections import DEFAULT_SCOPES, ConnectionForm, ConnectionStore
    from identity.federation.domains import DomainClaims
    from identity.federation.errors import FederationError
    from identity.organizations.actors import Actor
    from identity.organizations.trail import Trail
    from service.database.db import service_secret
    from service.outbound.upstream import UpstreamRequests

    settings = environment_settings()
    secret = sys.stdin.readline().rstrip("\r\n") if client_secret_stdin else None
    upstream = UpstreamRequests(timeout=settings.upstream_timeout, loopback=settings.outbound_loopback)
    keys = sealer(engine)
    store = ConnectionStore(engine, keys, upstream, OutboundRule(loopback=settings.outbound_loopback))
    uris = registration_uris(settings.issuer, org_id)
    endpoints = Endpoints(**uris, try_it=f"{settings.issuer}/federation/{org_id}/test")
    journal = Trail(engine, service_secret(engine, keys, "directory-cursor-key"))  # the app's trail key
    administration = ConnectionAdministration(store, DomainClaims(engine), journal, upstream, lambda _org: endpoints)
    form = ConnectionForm(
        issuer, client_id, secret, scopes or DEFAULT_SCOPES, default_role, sso_required, list(domains) or None
    )
    try:
        connection = administration.save(Actor.command_line(org_id), form)
    except FederationError as error:
        fail(f"{error.title}: {error.description}")
    document = {**connection.as_dict(), **registration_uris(settings.issuer, org_id)}
    lines = [f"{name}: {value}" for name, value in document.items() if isinstance(value, str | bool)]
    output(as_json, document, "\n".join(lines))


def registration_uris(issuer: str, org_id: str) -> dict[str, str]:
    """What to register at the provider for ORG's connection."""
    return {
        "redirect_uri": f"{issuer}/federation/{org_id}/callback",
        "post_logout_redirect_uri": f"{issuer}/federation/signed-out",
        "backchannel_logout_uri": f"{issuer}/federation/{org_id}/backchannel-logout",
    }
