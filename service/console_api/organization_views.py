"""What the console's organization pages show, made from the domain's records (``organization_pages.py`` answers the
requests): a member's row and the roles the visitor may give them, an application's summary and its form's values,
an entry of the audit trail with names for its ids, and the applications' form read into a registration."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from identity.api_keys.console_rules import NotAllowed
from identity.common.errors import InvalidInput
from identity.common.vocabulary import GRANTS
from identity.organizations import applications as apps
from identity.organizations import rules, trail
from identity.organizations.actors import Actor
from identity.organizations.applications import Changes, Registration
from identity.organizations.invitations import Invitation
from identity.organizations.members import MemberRecord


@dataclass(frozen=True, slots=True)
class MemberRow:
    user_id: str
    name: str
    email: str
    role: str
    joined_at: datetime
    last_sign_in_at: datetime | None
    email_verified: bool
    version: str
    role_choices: tuple[str, ...]  # the roles the visitor may set (empty: none, the role is shown as text)
    removable: bool


@dataclass(frozen=True, slots=True)
class MembersView:
    manages: bool
    members: list[MemberRow]
    next_cursor: str | None
    invitations: list[Invitation]
    assignable_roles: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AppsView:
    manages: bool
    apps: list[Any]
    auth_methods: tuple[str, ...]
    grants: tuple[str, ...]
    scopes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AuditPage:
    events: list[Any]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class ShownEntry:
    at: datetime
    kind: str
    actor_label: str
    network: str | None
    subject_label: str | None
    details: dict[str, str]


def shown_entry(entry: trail.Entry, labels: dict[str, str]) -> ShownEntry:
    if entry.actor_kind == "command_line":
        actor = "command line"
    else:
        actor = labels.get(entry.actor_id or "", entry.actor_id or "")
        if entry.actor_kind == "client":
            actor = f"application {actor}"
    subject = labels.get(entry.subject, entry.subject) if entry.subject else None
    return ShownEntry(entry.at, entry.kind, actor, entry.network, subject, dict(entry.details))


def member_row(actor: Actor, member: MemberRecord, owners: int) -> MemberRow:
    choices = []
    for role in ("owner", "admin", "member"):
        try:
            rules.check_change(actor, member.user_id, member.role, role, owners)
        except (NotAllowed, rules.Conflict):
            continue
        choices.append(role)
    if choices == [member.role]:
        choices = []
    removable = member.user_id != actor.user_id
    if removable:
        try:
            rules.check_removal(actor, member.role, owners)
        except (NotAllowed, rules.Conflict):
            removable = False
    return MemberRow(
        member.user_id, member.name, member.email, member.role, member.joined_at, member.last_sign_in_at,
        member.email_verified, member.tag, tuple(choices), removable,
    )  # fmt: skip


def plain_row(member: MemberRecord) -> MemberRow:
    return MemberRow(
        member.user_id, member.name, member.email, member.role, member.joined_at, member.last_sign_in_at,
        member.email_verified, member.tag, (), False,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class AppView:
    id: str
    name: str
    auth_method: str
    grants: tuple[str, ...]
    user_scopes: tuple[str, ...]
    management_scopes: tuple[str, ...]
    created_at: datetime
    previous_secret_expires_at: datetime | None
    version: str
    has_secret: bool
    confidential: bool


def app_view(client: Any) -> AppView:
    return AppView(
        client.id, client.name, client.auth_method, client.grants, apps.user_scopes(client),
        apps.management_scopes(client), client.created_at, client.previous_secret_expires_at, apps.tag(client),
        client.auth_method in ("client_secret_basic", "client_secret_post"), not client.public,
    )  # fmt: skip


def form_values(client: Any) -> dict[str, str]:
    return {
        "name": client.name,
        "redirect_uris": " ".join(client.redirect_uris),
        "post_logout_redirect_uris": " ".join(client.post_logout_redirect_uris),
        "web_origins": " ".join(client.web_origins),
        "backchannel_logout_uri": client.backchannel_logout_uri or "",
    }


def lines(text: str) -> tuple[str, ...]:
    """A list typed into one field, separated by spaces (a form's value holds no line break: request_reading)."""
    return tuple(text.split())


def registration_of(form: dict[str, str]) -> Registration:
    jwks_text = form.get("jwks", "").strip()
    jwks = None
    if jwks_text:
        import orjson

        try:
            jwks = orjson.loads(jwks_text)
        except orjson.JSONDecodeError:
            raise InvalidInput("the JWKS must be a JSON object with a non-empty 'keys' list") from None
    return Registration(
        name=form.get("name", ""),
        auth_method=form.get("auth_method", ""),
        redirect_uris=lines(form.get("redirect_uris", "")),
        post_logout_redirect_uris=lines(form.get("post_logout_redirect_uris", "")),
        web_origins=lines(form.get("web_origins", "")),
        backchannel_logout_uri=form.get("backchannel_logout_uri", "").strip() or None,
        grants=tuple(grant for grant in GRANTS if form.get(f"grant_{grant}") == "on"),
        scopes=tuple(
            scope for scope in apps.ORGANIZATION_SCOPES if form.get("scope_" + scope.replace(":", "_")) == "on"
        ),
        jwks=jwks,
    )


def duration(span: timedelta) -> str:
    seconds = int(span.total_seconds())
    if seconds % 3600 == 0 and seconds >= 3600:
        hours = seconds // 3600
        return f"{hours} hour{'s' if hours > 1 else ''}"
    minutes = max(1, seconds // 60)
    return f"{minutes} minute{'s' if minutes > 1 else ''}"


def changes_of(form: dict[str, str]) -> Changes:
    """An application's form read into the change it asks (the fields given, for the trail)."""
    return Changes(
        name=form.get("name", ""),
        redirect_uris=lines(form.get("redirect_uris", "")),
        post_logout_redirect_uris=lines(form.get("post_logout_redirect_uris", "")),
        web_origins=lines(form.get("web_origins", "")),
        backchannel_logout_uri=form.get("backchannel_logout_uri", "").strip(),
        changed=tuple(sorted(name for name in form if name not in ("csrf_token", "version"))),
    )
