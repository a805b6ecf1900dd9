"""The ``regional-menus`` command line (docs/cli.md).

Every command takes ``--database-url`` after its name, and every command but ``serve`` takes ``--json``.
Text output is a table with a header line; ``--json`` output is JSON. Bad input is one line on stderr
(``{"error": …}`` under ``--json``) with exit status 2, and nothing half-written. Every database error
names the database: the default is ``./var/regional-menus.sqlite3``, made absolute.

Each command imports what it uses in its body: the command tree and its ``--help`` load click and the settings
only, never SQLAlchemy, Alembic or the app (tests/system/test_cli_imports.py).

This module is the entry point (``run``) and the root group; each command group has its module beside it (``db``,
``api_keys``, ``orgs``, ``users``, ``clients``, ``signing_keys``, ``secrets_at_rest``, ``serve``), and what they
share is in ``common``.
"""

from __future__ import annotations

import json
import re
import sys

import click

from identity.common.errors import InvalidInput
from service.cli.api_keys import api_keys_group
from service.cli.clients import clients_group
from service.cli.db import db_group
from service.cli.orgs import orgs_group
from service.cli.secrets_at_rest import secrets_group
from service.cli.serve import serve
from service.cli.signing_keys import keys_group
from service.cli.users import users_group
from service.ops.logs import configure_command
from service.settings import ConfigurationError


@click.group()
@click.version_option(package_name="regional-menus")
def main() -> None:
    """Regional Menus: the menus API and its identity endpoints."""
    configure_command()  # audit lines on standard error; `serve` sets up the server's logging instead


for command in (serve, db_group, api_keys_group, orgs_group, users_group, clients_group, keys_group, secrets_group):
    main.add_command(command)


def run(args: list[str] | None = None) -> None:
    """Entry point: any bad input is one line on stderr (``{"error": …}`` under ``--json``) and exit status 2."""
    arguments = sys.argv[1:] if args is None else args
    try:
        main.main(args=arguments, prog_name="regional-menus", standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.Abort:
        sys.exit(130)
    except click.ClickException as error:
        _error(error.format_message(), as_json="--json" in arguments)
    except (InvalidInput, _sealing_error()) as error:  # the identity domain's refusal of bad input or of the keys
        _error(str(error), as_json="--json" in arguments)
    except ConfigurationError as error:  # a MENUS_* variable that cannot be used: one line naming it
        _error(str(error), as_json="--json" in arguments)


def _one_line(message: str) -> str:
    """``message`` on one line: each line break, with the tabs and spaces around it (click lists a missing
    option's choices one a line, each after a tab), becomes one space."""
    return re.sub(r"[ \t]*\n\s*", " ", message).strip()


def _sealing_error() -> type[Exception]:
    """identity.keys.sealing's refusal, imported only when an exception reaches ``run`` (it loads cryptography)."""
    from identity.keys.sealing import SealingError

    return SealingError


def _error(message: str, *, as_json: bool) -> None:
    line = _one_line(message)
    click.echo(
        json.dumps({"error": line}, ensure_ascii=False) if as_json else f"regional-menus: error: {line}", err=True
    )
    sys.exit(2)
