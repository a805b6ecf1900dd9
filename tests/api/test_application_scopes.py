"""Least privilege for application clients: a client_credentials client gets no application scope unless it
was registered with it."""

from __future__ import annotations

from click.testing import CliRunner
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from service.cli.commands import main
from tests.support import token_flows
from tests.support.token_flows import assert_oauth_error

# Least privilege: no application scope unless registered with it


def test_client_credentials_client_registered_without_scope_gets_no_application_scope(
    http: TestClient, engine: Engine, acme: Organization
) -> None:
    job = token_flows.register(engine, acme, "Nightly job", grants=["client_credentials"])
    assert job.client.scopes == ()
    assert_oauth_error(token_flows.application_token(http, job, scope="members:read"), "invalid_scope")
    assert_oauth_error(token_flows.application_token(http, job), "invalid_scope")


def test_client_credentials_client_registered_with_members_read_gets_it(
    http: TestClient, engine: Engine, acme: Organization
) -> None:
    reporter = token_flows.register(engine, acme, "Reporter", grants=["client_credentials"], scopes=["members:read"])
    response = token_flows.application_token(http, reporter)
    assert response.status_code == 200, response.text
    assert response.json()["scope"] == "members:read"


def test_clients_create_help_says_members_read_is_granted_only_when_asked() -> None:
    result = CliRunner().invoke(main, ["clients", "create", "--help"], terminal_width=200)
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "no application scope: members:read" in text and "only when given" in text
