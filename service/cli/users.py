"""``regional-menus users``: accounts, their passwords, addresses and whether they may sign in."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from identity.common.vocabulary import ROLES
from service.cli.common import database_option, fail, json_option, output, table, user_of

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


USER_HEADERS = ["ID", "EMAIL", "NAME", "ORGS (id:role)"]


@click.group("users", short_help="Create, list, disable and enable users.")
def users_group() -> None:
    """Create and list users; reset a password, mark an address verified, disable and enable a user."""


@users_group.command("create", short_help="Create a user in one or more organizations.")
@click.option("--email", required=True, help="Email address; unique, compared without regard to case.")
@click.option("--name", required=True, help="Full name.")
@click.option("--password-stdin", is_flag=True, required=True, help="Read the password from standard input.")
@click.option("--org", "org_ids", multiple=True, required=True, help="Organization id; repeat for several.")
@click.option("--role", type=click.Choice(ROLES), default="member", show_default=True, help="Role in each --org.")
@json_option
@database_option
def users_create(
    email: str, name: str, password_stdin: bool, org_ids: tuple[str, ...], role: str, as_json: bool, engine: Engine
) -> None:
    """Create a user in one or more organizations; the password is read from standard input."""
    from identity.accounts.users import UserStore

    password = sys.stdin.readline().rstrip("\r\n")
    user = UserStore(engine).create(email, name, password, [(org_id, role) for org_id in org_ids])
    output(as_json, user.as_dict(), table(USER_HEADERS, [_user_row(user)]))


@users_group.command("list", short_help="List users and their organizations.")
@json_option
@database_option
def users_list(as_json: bool, engine: Engine) -> None:
    """List users and their organizations."""
    from identity.accounts.users import UserStore

    users = UserStore(engine).list()
    output(as_json, [u.as_dict() for u in users], table(USER_HEADERS, [_user_row(u) for u in users]))


@users_group.command("reset-password", short_help="Replace a password; end every session.")
@click.argument("email")
@click.option("--password-stdin", is_flag=True, required=True, help="Read the new password from standard input.")
@json_option
@database_option
def users_reset_password(email: str, password_stdin: bool, as_json: bool, engine: Engine) -> None:
    """Replace a user's password (read from standard input) and end every session and token of the user."""
    from identity.accounts.password_reset import replace_password
    from identity.accounts.passwords import WeakPassword, check_strength
    from identity.tokens.revoked_grants import Revoker

    users, user_id = user_of(engine, email)
    password = sys.stdin.readline().rstrip("\r\n")
    try:
        check_strength(password)
    except WeakPassword as error:
        fail(str(error))
    replace_password(users, Revoker(engine), user_id, password)
    document = {"id": user_id, "email": users.get(user_id).email, "sessions_ended": True}
    output(as_json, document, f"{document['email']}: password replaced; every session and token ended")


@users_group.command("verify-email", short_help="Mark a user's email address verified.")
@click.argument("email")
@json_option
@database_option
def users_verify_email(email: str, as_json: bool, engine: Engine) -> None:
    """Mark a user's email address verified (email_verified becomes true), as a followed mailed link would."""
    from identity.common import audit

    users, user_id = user_of(engine, email)
    if not users.mark_email_verified(user_id, email):
        fail("no user has this email address")
    user = users.get(user_id)
    audit.record(audit.EMAIL_VERIFIED, user_id=user.id)
    document = {"id": user.id, "email": user.email, "email_verified": user.email_verified}
    output(as_json, document, f"{user.email}: email address verified")


@users_group.command("disable", short_help="Stop a user's sign-ins; end every session.")
@click.argument("email")
@json_option
@database_option
def users_disable(email: str, as_json: bool, engine: Engine) -> None:
    """Disable a user: no sign-in from now on, and every session and token of the user ends at once."""
    from identity.accounts.disabled_users import disable
    from identity.tokens.revoked_grants import Revoker

    users, user_id = user_of(engine, email)
    disable(users, Revoker(engine), user_id)
    user = users.get(user_id)
    document = {"id": user.id, "email": user.email, "disabled": True, "sessions_ended": True}
    output(as_json, document, f"{user.email}: disabled; every session and token ended")


@users_group.command("enable", short_help="Let a disabled user sign in again.")
@click.argument("email")
@json_option
@database_option
def users_enable(email: str, as_json: bool, engine: Engine) -> None:
    """Enable a disabled user: they may sign in again (the tokens revoked when they were disabled stay revoked)."""
    from identity.accounts.disabled_users import enable

    users, user_id = user_of(engine, email)
    enable(users, user_id)
    user = users.get(user_id)
    document = {"id": user.id, "email": user.email, "disabled": False}
    output(as_json, document, f"{user.email}: enabled; the user may sign in again")


def _user_row(user: Any) -> list[str]:
    return [user.id, user.email, user.name, ",".join(f"{m.org.id}:{m.role}" for m in user.memberships)]
