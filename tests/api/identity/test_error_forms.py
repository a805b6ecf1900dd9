"""Each identity endpoint answers errors in the form its operation declares (page, oauth or resource): also a
database outage and an unexpected error, never with a stack trace."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from identity.common.issuer import Issuer
from service.identity_api import http_errors
from service.web.contracts import Contract, contract
from service.web.problems import connexion_handler, to_problem
from tests.support.database_faults import outage, statements_fail
from tests.support.identity_fixtures import Registered, register
from tests.support.identity_pages import authorize, basic, bearer

# Which form each path answers errors in.


def test_every_path_answers_errors_in_the_form_its_operations_declare() -> None:
    forms = http_errors.ErrorForms(contract("identity.yaml"), "/tenant-a")
    assert forms.of("/tenant-a/sign-in") == "page"
    assert forms.of("/tenant-a/oauth2/token") == "oauth"
    assert forms.of("/tenant-a/oauth2/userinfo") == "resource"
    assert forms.of("/tenant-a/nothing-here") == "resource"


@pytest.mark.parametrize(
    "operations",
    [{"post": {"operationId": "token.exchange"}}, {"get": {"x-error-form": "page"}, "post": {"x-error-form": "oauth"}}],
    ids=["missing", "disagreeing"],
)
def test_an_operation_without_its_one_error_form_stops_the_app_from_starting(operations: dict[str, Any]) -> None:
    identity = Contract("identity.yaml", {"paths": {"/oauth2/token": operations}})
    with pytest.raises(ValueError, match="x-error-form"):
        http_errors.ErrorForms(identity, "")


# A database outage, and an unexpected error: each endpoint's own form, never a stack trace.


def test_database_outage_answers_503_in_the_oauth_form_at_the_token_endpoint(
    app: Any, engine: Engine, org: Organization
) -> None:
    job = register(engine, org, name="Job", grants=["client_credentials"], scopes=["members:read"])
    with TestClient(app) as client, statements_fail(app.engine, outage()):
        response = client.post("/oauth2/token", data={"grant_type": "client_credentials"}, headers=basic(job))
    assert response.status_code == 503 and response.headers["retry-after"] == "5"
    assert response.json()["error"] == "temporarily_unavailable"
    assert response.headers["cache-control"] == "no-store"


def test_database_outage_answers_a_503_page_on_the_sign_in_pages(app: Any, web: Registered) -> None:
    with TestClient(app, follow_redirects=False) as client, statements_fail(app.engine, outage()):
        response = authorize(client, web.id)
    assert response.status_code == 503 and response.headers["retry-after"] == "5"
    assert response.headers["content-type"].startswith("text/html")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]


def test_unexpected_error_answers_500_without_a_trace(app: Any, engine: Engine, org: Organization) -> None:
    job = register(engine, org, name="Job", grants=["client_credentials"], scopes=["members:read"])
    with TestClient(app) as client:
        token = client.post("/oauth2/token", data={"grant_type": "client_credentials"}, headers=basic(job))
        assert token.status_code == 200, token.text
        with statements_fail(app.engine, RuntimeError("secret internal detail")):
            response = client.get("/oauth2/userinfo", headers=bearer(token.json()["access_token"]))
    assert response.status_code == 500 and response.json()["error"] == "server_error"
    assert "secret internal detail" not in response.text and "Traceback" not in response.text


# A constraint that refuses a write (a race a store did not take, or a bug) is no outage: 500, logged as unexpected.


def constraint_refused() -> sa.exc.IntegrityError:
    return sa.exc.IntegrityError(
        "INSERT INTO consents …", {}, Exception("duplicate key value violates unique constraint")
    )


@pytest.mark.parametrize(("path", "form"), [("/oauth2/token", "oauth"), ("/consent", "page")])
def test_a_refused_constraint_is_answered_500_and_logged_as_unexpected_never_as_the_database_down(
    path: str, form: str, caplog: pytest.LogCaptureFixture
) -> None:
    identity = contract("identity.yaml")
    errors = http_errors.IdentityErrors(
        identity, Issuer("http://127.0.0.1:8000"), connexion_handler(identity.allowed_methods(""))
    )
    response = errors.response({"type": "http", "path": path}, constraint_refused())
    assert response.status_code == 500 and "retry-after" not in response.headers
    if form == "oauth":
        assert b'"server_error"' in response.body
    assert "database unavailable" not in caplog.text and "unexpected error" in caplog.text


def test_a_refused_constraint_is_an_internal_error_problem_and_an_outage_still_a_503() -> None:
    assert to_problem(constraint_refused()).status == 500
    assert to_problem(constraint_refused()).code == "internal_error"
    outage = to_problem(sa.exc.OperationalError("SELECT 1", {}, ConnectionRefusedError("connection refused")))
    assert outage.status == 503 and outage.headers == {"Retry-After": "5"}
