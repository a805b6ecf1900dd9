"""openapi-generator's validation and its Python and TypeScript (``typescript-fetch``) clients, from the live URLs.

A user points openapi-generator at the served documents, so that is what this module does: one live server, one JVM
(``tests/support/openapi_generator.py``: ``batch`` validates all four documents and generates both clients of each),
then real calls with each client: the menus list page by page (``next_cursor`` and the RFC 8288 ``Link`` header), an
application token (``client_credentials``) and its introspection, and errors parsed into the problem and OAuth error
models. The TypeScript program (``tests/system/sdk_ts/generated_clients.test.ts``) is compiled with the pinned ``tsc``
as the README's set-up compiles (an ES module package, ``--module nodenext``; typescript-fetch generated with
``importFileExtension=.js``, as docs/menus-api.md says) and run by Node's test runner.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.live import ROOT, LiveService, live_service
from tests.support.openapi_generator import Generated, generate_clients

PAGE_SIZE = 10
DISH_COUNT = 146
PROGRAM = ROOT / "tests" / "system" / "sdk_ts" / "generated_clients.test.ts"
BIN = ROOT / "node_modules" / ".bin"
PACKAGES = ("menus_client", "identity_client", "operations_client", "console_client")
# The compiler flags of the README and docs/menus-api.md, exactly (an ES module program, `--module nodenext`).
TSC_FLAGS = ["--module", "nodenext", "--target", "es2022", "--types", "node", "--strict"]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    with live_service(tmp_path_factory.mktemp("generator-live")) as service:
        yield service


@pytest.fixture(scope="module")
def generated(service: LiveService, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Generated]:
    documents = {
        "menus": f"{service.url}/v1/openapi.json",
        "identity": f"{service.url}/openapi.json",
        "operations": f"{service.url}/ops/openapi.json",
        "console": f"{service.url}/console/openapi.json",
    }
    generated = generate_clients(documents, tmp_path_factory.mktemp("generated"))
    folders = [str(generated.python_package(name)) for name in documents]
    sys.path[:0] = folders
    importlib.invalidate_caches()
    try:
        yield generated
    finally:
        for folder in folders:
            sys.path.remove(folder)
        for name in [name for name in sys.modules if name.split(".")[0] in PACKAGES]:
            del sys.modules[name]


@pytest.fixture(scope="module")
def application(service: LiveService) -> dict[str, str]:
    """A client_credentials client of an organization, with the scope members:read."""
    org = service.cli_json("orgs", "create", "--name", "Generator Kitchen")
    return service.cli_json(
        "clients", "create", "--name", "Generated client", "--org", org["id"],
        "--auth-method", "client_secret_basic", "--grant", "client_credentials", "--scope", "members:read",
    )  # fmt: skip


def package(name: str) -> ModuleType:
    return importlib.import_module(name)


def next_url(link: str | None) -> str | None:
    """The target of ``Link: <URL>; rel="next"`` (RFC 8288 §3), or None."""
    if link is None:
        return None
    found = re.fullmatch(r'<([^>]*)>; rel="next"', link)
    assert found, link
    return found.group(1)


def test_every_served_document_validates_and_gives_both_clients_without_a_warning(generated: Generated) -> None:
    assert "[SUCCESS] Batch generation finished 8 generators successfully." in generated.output, generated.output
    assert "Errors:" not in generated.output and "Warning count" not in generated.output, generated.output
    assert generated.warnings() == [], "\n".join(generated.warnings())


def test_the_python_client_pages_through_the_dishes_by_next_cursor_and_by_link_header(
    generated: Generated, service: LiveService
) -> None:
    menus = package("menus_client")
    key = service.api_key("generated-python")
    slugs: list[str] = []
    with menus.ApiClient(menus.Configuration(host=f"{service.url}/v1", access_token=key)) as api:
        dishes = menus.DishesApi(api)
        cursor: str | None = None
        for _ in range(DISH_COUNT):
            answer = dishes.menus_list_dishes_with_http_info(course=menus.Course.MAIN, limit=PAGE_SIZE, cursor=cursor)
            page = answer.data
            assert isinstance(page, menus.DishPage) and answer.status_code == 200
            assert all(isinstance(dish, menus.Dish) and dish.course == menus.Course.MAIN for dish in page.data)
            slugs += [dish.slug for dish in page.data]
            link = next_url({name.lower(): value for name, value in (answer.headers or {}).items()}.get("link"))
            if page.next_cursor is None:
                assert link is None
                break
            assert link == f"{service.url}/v1/menus/dishes?course=main&limit={PAGE_SIZE}&cursor={page.next_cursor}"
            request = urllib.request.Request(link, headers={"Authorization": f"Bearer {key}"})
            with urllib.request.urlopen(request, timeout=10) as followed:
                by_link = json.load(followed)
            cursor = page.next_cursor
            following = dishes.menus_list_dishes(course=menus.Course.MAIN, limit=PAGE_SIZE, cursor=cursor)
            assert [dish["slug"] for dish in by_link["data"]] == [dish.slug for dish in following.data]
            assert by_link["next_cursor"] == following.next_cursor
    assert len(slugs) == len(set(slugs)) == page.total > PAGE_SIZE


def test_the_python_client_parses_a_refused_cursor_into_a_problem(generated: Generated, service: LiveService) -> None:
    menus = package("menus_client")
    configuration = menus.Configuration(host=f"{service.url}/v1", access_token=service.api_key("generated-errors"))
    with menus.ApiClient(configuration) as api:
        with pytest.raises(menus.ApiException) as refused:
            menus.DishesApi(api).menus_list_dishes(cursor="not-a-cursor")
    problem = refused.value.data
    assert refused.value.status == 400 and isinstance(problem, menus.Problem)
    assert problem.code == "invalid_cursor" and problem.status == 400


def test_the_python_client_gets_an_application_token_and_introspects_it(
    generated: Generated, service: LiveService, application: dict[str, str]
) -> None:
    identity = package("identity_client")
    configuration = identity.Configuration(
        host=service.url, username=application["client_id"], password=application["client_secret"]
    )
    with identity.ApiClient(configuration) as api:
        tokens = identity.TokensApi(api)
        issued = tokens.token_exchange(grant_type="client_credentials", scope="members:read")
        assert isinstance(issued, identity.TokenResponse) and issued.scope == "members:read"
        introspected = tokens.introspection_introspect(token=issued.access_token)
        assert isinstance(introspected, identity.IntrospectionResponse) and introspected.active is True
        assert introspected.client_id == application["client_id"]
        with pytest.raises(identity.ApiException) as refused:
            tokens.token_exchange(grant_type="password")
    error = refused.value.data
    assert refused.value.status == 400 and isinstance(error, identity.OAuthError)
    assert error.error == "unsupported_grant_type" and error.error_description


def test_the_typescript_client_pages_gets_a_token_introspects_it_and_parses_errors(
    generated: Generated, service: LiveService, application: dict[str, str], tmp_path: Path
) -> None:
    for name in ("menus", "identity"):
        shutil.copytree(generated.typescript_sources(name), tmp_path / name)
    shutil.copy(PROGRAM, tmp_path / PROGRAM.name)
    (tmp_path / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
    # The README's TypeScript set-up: an ES module package, compiled as docs/menus-api.md says.
    (tmp_path / "package.json").write_text('{"type": "module", "private": true}\n', encoding="utf-8")
    compiled = subprocess.run(
        [str(BIN / "tsc"), *TSC_FLAGS, PROGRAM.name], cwd=tmp_path, capture_output=True, text=True
    )
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    env = {
        **os.environ,
        "SERVICE_URL": service.url,
        "MENUS_KEY": service.api_key("generated-typescript"),
        "CLIENT_ID": application["client_id"],
        "CLIENT_SECRET": application["client_secret"],
    }
    command = ["node", "--test", "--test-reporter=spec", "generated_clients.test.js"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ℹ fail 0" in done.stdout and "ℹ pass 4" in done.stdout, done.stdout
