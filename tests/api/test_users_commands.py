"""``regional-menus users reset-password`` and ``users verify-email``: what they change, and exit 2 on bad input."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from identity.accounts.users import User, UserStore
from service.settings import Settings
from tests.support.command_line import Ran, command
from tests.support.identity_fixtures import EMAIL, PASSWORD
from tests.support.passwords import FAST_HASHING


def users_command(*args: str, stdin: str = "") -> Ran:
    return command("users", *args, stdin=stdin)  # in process (tests/support/command_line.py)


def test_users_verify_email_marks_the_address_verified_and_refuses_an_unknown_one(
    settings: Settings, engine: Engine, user: User
) -> None:
    done = users_command("verify-email", "--json", "--database-url", settings.database_url, EMAIL.upper())
    assert done.returncode == 0, done.stderr
    assert '"email_verified": true' in done.stdout
    assert UserStore(engine, hashing=FAST_HASHING).get(user.id).email_verified
    refused = users_command("verify-email", "--database-url", settings.database_url, "nobody@example.com")
    assert refused.returncode == 2 and refused.stderr.strip().endswith("no user has this email address")


def test_users_reset_password_replaces_the_password_and_refuses_a_weak_one(
    settings: Settings, engine: Engine, user: User
) -> None:
    url = settings.database_url
    weak = users_command("reset-password", "--password-stdin", "--database-url", url, EMAIL, stdin="short\n")
    assert weak.returncode == 2
    users = UserStore(engine, hashing=FAST_HASHING)
    assert users.authenticate(EMAIL, PASSWORD) is not None  # nothing half-written
    done = users_command(
        "reset-password", "--password-stdin", "--json", "--database-url", url, EMAIL, stdin="a new pantry password\n"
    )
    assert done.returncode == 0, done.stderr
    assert '"sessions_ended": true' in done.stdout
    assert users.authenticate(EMAIL, PASSWORD) is None
    assert users.authenticate(EMAIL, "a new pantry password") is not None
