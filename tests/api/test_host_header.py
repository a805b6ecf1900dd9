"""No answer is built from the request's ``Host``: redirects carry relative locations, and no path is redirected
to add or remove a trailing slash (docs/menus-api.md), but the console's root (docs/console.md).

Starlette's routers redirect ``/v1`` to ``http://{Host}/v1/`` and ``/console/keys/`` to
``http://{Host}/console/keys``: an open redirect to whatever host a request names.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from service.settings import Settings
from tests.support.apps import make_app

EVIL = {"Host": "evil.example"}
NOT_REDIRECTED = [
    "/v1",
    "/v1/menus/regions/",
    "/v1/ui",
    "/oauth2/token/",
    "/oauth2/authorize/",
    "/console/keys/",
    "/console/keys/new/",
    "/console/sign-in/",
    "/console/callback/",
    "/console/openapi.json/",
    "/ops",
]


@pytest.fixture
def evil(app: Any) -> Iterator[TestClient]:
    with TestClient(app, follow_redirects=False, headers=EVIL) as client:
        yield client


@pytest.mark.parametrize("path", NOT_REDIRECTED)
def test_no_path_is_redirected_to_add_or_remove_a_trailing_slash(evil: TestClient, path: str) -> None:
    for method in ("GET", "POST"):
        response = evil.request(method, path)
        assert response.status_code in (404, 405), (method, path, response.status_code)
        assert "location" not in response.headers


def test_v1_is_a_not_found_problem(evil: TestClient) -> None:
    response = evil.get("/v1")
    assert response.status_code == 404 and response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "not_found"


def test_console_trailing_slash_paths_are_a_not_found_page(evil: TestClient) -> None:
    response = evil.get("/console/keys/")
    assert response.status_code == 404 and response.headers["content-type"].startswith("text/html")


def test_the_console_root_redirects_to_its_home_page_by_a_relative_location(evil: TestClient) -> None:
    response = evil.get("/console")
    assert response.status_code == 303 and response.headers["location"] == "/console/"


def test_an_issuer_path_without_its_slash_is_not_redirected(settings: Settings, engine: Any, catalog: Any) -> None:
    app = make_app(settings.with_changes(issuer="http://127.0.0.1:8000/tenant"), catalog=catalog)
    with TestClient(app, follow_redirects=False, headers=EVIL) as client:
        for path in ("/tenant", "/tenant/oauth2/token/"):
            response = client.get(path)
            assert response.status_code == 404 and "location" not in response.headers
