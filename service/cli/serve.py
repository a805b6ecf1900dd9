"""``regional-menus serve``: the service, on one process or under gunicorn's workers (--demo: with demo data)."""

from __future__ import annotations

import functools
import os
import socket
from typing import Any

import click

from service.cli.common import database_url_option, environment_settings, fail, opened
from service.settings import DEFAULT_HOST, DEFAULT_PORT, Settings


def _check_port_free(host: str, port: int) -> None:
    """Refuse at once, before any data is touched, when another process listens on ``host:port``."""
    if port == 0:
        return  # any free port
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as error:
        fail(f"cannot listen on {host!r}: {error.strerror}")
    with socket.socket(family, kind, protocol) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds: TIME_WAIT is no obstacle
        try:
            probe.bind(address)
        except OSError as error:
            fail(
                f"cannot listen on {host}:{port}: {error.strerror} (is the service already running there?); "
                "nothing was changed"
            )


@click.command(short_help="Run the service (--demo: with demo data to try it).")
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on (0.0.0.0 or :: for all).")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535), help="Port.")
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    help="Run gunicorn with this many uvicorn workers (production); without it, one uvicorn process.",
)
@click.option(
    "--demo",
    is_flag=True,
    help="Bring the schema up to date, create demo data (API key, org, user, client), print how to use it.",
)
@database_url_option
def serve(host: str, port: int, workers: int | None, demo: bool, database_url: str) -> None:
    """Run the service (on a database at the current schema: see `db upgrade`)."""
    from service.server.collection import pause_collection

    pause_collection()  # until the app is built and frozen (service.server.collection)
    from service.database.schema import require_current
    from service.ops import multiprocess
    from service.ops.logs import configure as configure_logging
    from service.server.bounded_http import HeadLimits
    from service.server.runner import Listen, run_single, run_workers

    _check_port_free(host, port)  # before anything is written: a second demo must not replace the first one's key
    with opened(database_url, schema_current=False, create=demo) as engine:
        settings = environment_settings(port=port).with_changes(database_url=engine.url.render_as_string(False))
        if demo:  # the demo's modules (mail, passwords, Alembic) are loaded for it alone
            from service.cli.demo import prepare as prepare_demo
            from service.database.schema import upgrade
            from service.mail.transports import outbox_folder

            # development: back-channel logout URIs may reach loopback (identity/common/outbound_uris.py); mail goes to
            # .eml files beside the database unless a transport is set, each logged with its link
            settings = settings.with_changes(outbound_loopback=True, mail_log_links=True)
            if not settings.smtp_url and not settings.mail_dir:
                settings = settings.with_changes(mail_dir=str(outbox_folder(settings.database_url).absolute()))

            upgrade(engine)
            click.echo(prepare_demo(engine, settings).instructions)
        require_current(engine)
        head = HeadLimits(
            settings.head_line_limit, settings.head_limit, settings.head_fields_limit, settings.head_timeout
        )
        listen = Listen(host, port, settings.keep_alive, settings.graceful_timeout, head)
        configure_logging()  # JSON lines; gunicorn's master and workers get the same set-up (service.server.runner)
        if workers is None:
            if multiprocess.ENV in os.environ:  # an operator's metrics directory: start it empty
                multiprocess.prepare_directory()
            run_single(_app(settings), listen)
        else:
            engine.dispose()  # the workers open their own connections after the fork
            run_workers(functools.partial(_app_to_fork, settings), listen, workers)


def _app(settings: Settings) -> Any:
    """The app, imported only here: under --workers, after the metrics directory is set."""
    from service.app import create_app

    return create_app(settings)


def _app_to_fork(settings: Settings) -> Any:
    """The app, built in gunicorn's master: the connections its build opened are closed before the workers are
    forked from it, and each worker opens its own (SQLAlchemy's "Using Connection Pools with Multiprocessing")."""
    app = _app(settings)
    app.engine.dispose()
    return app
