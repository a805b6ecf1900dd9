"""Access tokens issued with units of work (``identity.tokens.unit_of_work``): the records of the units a worker runs
in a row are written in one transaction at their commit, each only while its client still holds its secret, and
their ``token_issued`` events are written once their records are; a token refused then is not issued, and a
token issued without a unit writes at once."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import jwt
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from identity.accounts.organizations import Organization, OrganizationStore
from identity.clients.registry import Client, ClientStore
from identity.common import audit
from identity.common.errors import InvalidClient
from identity.common.tables import access_tokens
from identity.keys.sealing import Sealer, new_key
from identity.keys.signing_keys import SigningKeys
from identity.tokens.unit_of_work import UnitOfWork
from tests.support.database_faults import commits_fail_after_writing
from tests.support.defaults import SIGNING_KEYS_MAX_AGE
from tests.support.token_services import TokenServices, token_services

ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


@pytest.fixture
def org(engine: Engine) -> Organization:
    return OrganizationStore(engine).create("Acme Foods")


@pytest.fixture
def services(engine: Engine) -> TokenServices:
    keys = SigningKeys(
        engine, timedelta(0), timedelta(minutes=10), sealer=Sealer([new_key()]), max_age=SIGNING_KEYS_MAX_AGE
    )
    keys.ensure()
    return token_services(engine, keys)


def job(engine: Engine, org: Organization, name: str) -> Client:
    client, _ = ClientStore(engine).create(
        name=name, org_id=org.id, auth_method="client_secret_basic", grants=["client_credentials"]
    )
    return client


def issue(services: TokenServices, client: Client, org: Organization, work: UnitOfWork | None = None) -> str:
    token = services.minter.access_token(
        client_id=client.id, org=org, scope=("members:read",), user_id=None, secret_hash=client.secret_hash, work=work
    )
    (work.record if work is not None else audit.record)(
        audit.TOKEN_ISSUED, grant_type="client_credentials", client_id=client.id, org_id=org.id
    )
    return token.token


def recorded(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(connection.scalar(sa.select(sa.func.count()).select_from(access_tokens)) or 0)


def issued_events(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.fields["client_id"]
        for record in caplog.records
        if record.name == "regional_menus.audit" and record.fields["event"] == audit.TOKEN_ISSUED  # type: ignore[attr-defined]
    ]


@contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    """The SQL run meanwhile, and ``COMMIT`` for each commit."""
    seen: list[str] = []

    def executed(*args: Any) -> None:
        seen.append(args[2])

    def committed(*_: Any) -> None:
        seen.append("COMMIT")

    sa.event.listen(engine, "before_cursor_execute", executed)
    sa.event.listen(engine, "commit", committed)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "before_cursor_execute", executed)
        sa.event.remove(engine, "commit", committed)


def test_tokens_issued_in_a_row_are_recorded_after_the_last_in_one_transaction_and_their_events_then(
    engine: Engine, org: Organization, services: TokenServices, caplog: pytest.LogCaptureFixture
) -> None:
    clients = [job(engine, org, f"Job {n}") for n in range(3)]
    with statements(engine) as alone:
        issue(services, clients[0], org)  # one token, without a unit of work: its own transaction
    with caplog.at_level(logging.INFO, logger="regional_menus.audit"):
        units = services.token_work.open([None] * len(clients))
        tokens = [issue(services, client, org, unit) for client, unit in zip(clients, units, strict=True)]
        assert recorded(engine) == 1 and issued_events(caplog) == []  # nothing written, nothing handed out yet
        with statements(engine) as seen:
            assert services.token_work.commit(units) == [None, None, None]
    assert recorded(engine) == 4
    assert sum("INSERT INTO access_tokens" in statement for statement in seen) == 1  # one statement run for each record
    assert seen.count("COMMIT") == alone.count("COMMIT")  # three rows, the commits of one
    assert issued_events(caplog) == [client.id for client in clients]
    for token in tokens:
        jti = jwt.decode(token, options={"verify_signature": False})["jti"]
        assert services.verifier.verify_access_token(token).jti == jti  # live: its record was written


@pytest.mark.parametrize("beside", [1, 0], ids=["in-a-row", "alone"])
def test_a_token_whose_client_was_deleted_before_its_record_was_written_is_refused_and_never_logged_as_issued(
    engine: Engine, org: Organization, services: TokenServices, caplog: pytest.LogCaptureFixture, beside: int
) -> None:
    kept = [job(engine, org, f"Kept {n}") for n in range(beside)]
    deleted = job(engine, org, "Deleted")
    with caplog.at_level(logging.INFO, logger="regional_menus.audit"):
        units = services.token_work.open([None] * (beside + 1))
        for client, unit in zip([*kept, deleted], units, strict=True):
            issue(services, client, org, unit)
        ClientStore(engine).delete(deleted.id)  # on another node, while the row waited
        refused = services.token_work.commit(units)
    assert refused[:beside] == [None] * beside and isinstance(refused[beside], InvalidClient)
    assert recorded(engine) == beside
    assert issued_events(caplog) == [client.id for client in kept]


def test_when_the_rows_transaction_fails_every_token_of_the_row_is_refused_with_the_error_and_none_logged(
    engine: Engine,
    org: Organization,
    services: TokenServices,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = job(engine, org, "Job")
    with caplog.at_level(logging.INFO, logger="regional_menus.audit"):
        units = services.token_work.open([None, None])
        for unit in units:
            issue(services, client, org, unit)
        with commits_fail_after_writing(engine, access_tokens):
            refused = services.token_work.commit(units)
    assert all(isinstance(error, OperationalError) for error in refused) and len(refused) == 2
    assert recorded(engine) == 0
    assert issued_events(caplog) == []


def test_a_token_issued_without_a_unit_of_work_records_its_token_and_logs_its_event_at_once(
    engine: Engine, org: Organization, services: TokenServices, caplog: pytest.LogCaptureFixture
) -> None:
    client = job(engine, org, "Job")
    with caplog.at_level(logging.INFO, logger="regional_menus.audit"):
        units = services.token_work.open([None])
        issue(services, client, org)  # e.g. an authorization_code exchange run between two client_credentials ones
        assert recorded(engine) == 1 and issued_events(caplog) == [client.id]
        issue(services, client, org, units[0])
        assert recorded(engine) == 1
        assert services.token_work.commit(units) == [None]
    assert recorded(engine) == 2 and issued_events(caplog) == [client.id, client.id]
