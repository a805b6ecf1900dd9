"""The documents users receive are the ones we wrote; Swagger UI is framed by nobody; no URL comes from Host."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest
from starlette.testclient import TestClient

from data.yaml_text import safe_load
from service.ops.route_templates import UNMATCHED, RouteTemplates
from service.settings import Settings
from service.web.contracts import authored, contract
from service.web.served_documents import ServedDocument
from tests.support.apps import make_app
from tests.support.defaults import DEFAULTS

BASE_URL = "https://menus.example.com"
ISSUER = "https://id.example.com/tenant-a"
# (document, where it is served under the test settings, the server URL it must carry)
DOCUMENTS = [
    ("menus.yaml", "/v1/openapi", f"{BASE_URL}/v1"),
    ("identity.yaml", "/tenant-a/openapi", ISSUER),
    ("operations.yaml", "/ops/openapi", BASE_URL),
    ("console.yaml", "/console/openapi", f"{BASE_URL}/console"),
]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, validate_responses=True, base_url=BASE_URL, issuer=ISSUER)


@pytest.fixture
def web(app) -> TestClient:  # type: ignore[no-untyped-def]
    with TestClient(app, follow_redirects=False) as client:
        yield client


def count_refs(node: object) -> int:
    if isinstance(node, dict):
        return ("$ref" in node) + sum(count_refs(value) for value in node.values())
    if isinstance(node, list):
        return sum(count_refs(value) for value in node)
    return 0


@pytest.mark.parametrize(("name", "path", "server"), DOCUMENTS)
def test_served_document_equals_the_file_but_for_servers(web: TestClient, name: str, path: str, server: str) -> None:
    written = authored(name)
    for served in (web.get(f"{path}.json").json(), safe_load(web.get(f"{path}.yaml").text)):
        assert served["servers"] == [{**written["servers"][0], "url": server}]
        assert {k: v for k, v in served.items() if k != "servers"} == {
            k: v for k, v in written.items() if k != "servers"
        }
    assert count_refs(written) > 0 and count_refs(served) == count_refs(written)


def test_the_yaml_form_is_made_when_first_asked_for_not_at_start_up() -> None:
    served = ServedDocument.build(contract("menus.yaml"), "https://menus.example/v1")
    assert "body" in vars(served.json) and "body" not in vars(served.yaml)
    assert safe_load(served.yaml.body) == contract("menus.yaml").served("https://menus.example/v1")
    assert "body" in vars(served.yaml)


@pytest.mark.parametrize(("name", "path", "server"), DOCUMENTS)
def test_served_document_has_a_strong_etag_and_answers_304(web: TestClient, name: str, path: str, server: str) -> None:
    for suffix, media_type in ((".json", "application/json"), (".yaml", "application/yaml")):
        first = web.get(path + suffix)
        etag = first.headers["etag"]
        assert first.status_code == 200 and first.headers["content-type"] == media_type
        assert re.fullmatch(r'"[0-9a-f]{32}"', etag) and first.headers["cache-control"] == "no-cache"
        again = web.get(path + suffix, headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
        assert web.get(path + suffix, headers={"If-None-Match": '"other"'}).status_code == 200
        head = web.head(path + suffix)
        assert head.status_code == 200 and head.content == b"" and head.headers["etag"] == etag
    assert web.get(f"{path}.json").headers["etag"] != web.get(f"{path}.yaml").headers["etag"]


def test_a_document_refuses_other_methods_with_405_and_allow(web: TestClient) -> None:
    response = web.post("/v1/openapi.json")
    assert response.status_code == 405 and response.headers["allow"] == "GET, HEAD"
    assert response.json()["code"] == "method_not_allowed"


@pytest.mark.parametrize("page", ["/v1/ui/", "/tenant-a/ui/", "/ops/ui/", "/console/ui/"])
def test_swagger_ui_pages_forbid_framing_and_allow_only_their_own_scripts(web: TestClient, page: str) -> None:
    response = web.get(page)
    assert response.status_code == 200 and "swagger-ui" in response.text
    policy = dict(part.strip().split(" ", 1) for part in response.headers["content-security-policy"].split(";"))
    assert policy["frame-ancestors"] == "'none'" and policy["default-src"] == "'none'"
    assert "'unsafe-inline'" not in policy["script-src"] and "'unsafe-eval'" not in policy["script-src"]
    assert re.search(r"'sha256-[A-Za-z0-9+/]+=*'", policy["script-src"])  # the page's one inline script
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    asset = web.get(page + "swagger-ui-bundle.js")
    assert asset.status_code == 200 and "frame-ancestors 'none'" in asset.headers["content-security-policy"]


def test_each_swagger_ui_page_loads_its_own_apis_document_and_names_its_inline_code_by_digest(web: TestClient) -> None:
    for page, document in [("/v1/ui/", "/v1/openapi.json"), ("/tenant-a/ui/index.html", "/tenant-a/openapi.json"),
                           ("/ops/ui/", "/ops/openapi.json"), ("/console/ui/", "/console/openapi.json")]:  # fmt: skip
        response = web.get(page)
        assert f'url: "{document}",' in response.text and web.get(document).status_code == 200
        script = re.search(r"<script>(.*?)</script>", response.text, re.DOTALL)
        assert script is not None
        digest = base64.b64encode(hashlib.sha256(script.group(1).encode()).digest()).decode()
        assert f"'sha256-{digest}'" in response.headers["content-security-policy"]
    redirect = web.get("/tenant-a/ui/oauth2-redirect.html")  # where Swagger UI's "Authorize" comes back to
    assert redirect.status_code == 200 and "'sha256-" in redirect.headers["content-security-policy"]


def test_each_swagger_ui_page_is_titled_after_its_api(web: TestClient) -> None:
    titles = {
        page: re.search(r"<title>(.*?)</title>", web.get(page).text).group(1)  # type: ignore[union-attr]
        for page in ("/v1/ui/", "/tenant-a/ui/", "/ops/ui/", "/console/ui/")
    }
    assert titles == {
        "/v1/ui/": "Regional Menus API · Swagger UI",
        "/tenant-a/ui/": "Regional Menus Identity · Swagger UI",
        "/ops/ui/": "Regional Menus operations · Swagger UI",
        "/console/ui/": "Regional Menus Developer Console · Swagger UI",
    }


def test_swagger_ui_assets_revalidate_with_their_etag_and_answer_head_without_a_body(web: TestClient) -> None:
    first = web.get("/v1/ui/swagger-ui.css")
    assert first.status_code == 200 and first.headers["content-type"].startswith("text/css")
    again = web.get("/v1/ui/swagger-ui.css", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    head = web.head("/v1/ui/swagger-ui-bundle.js")
    assert head.status_code == 200 and head.content == b"" and int(head.headers["content-length"]) > 0


@pytest.mark.parametrize("name", ["index.j2", "swagger-initializer.js", "README.md", "..%2F__init__.py", "x/"])
def test_swagger_ui_serves_its_pages_and_assets_only_not_the_bundles_template_or_demo(
    web: TestClient, name: str
) -> None:
    response = web.get(f"/v1/ui/{name}")
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert response.headers["x-frame-options"] == "DENY"


def test_swagger_ui_refuses_other_methods_with_405_and_allow(web: TestClient) -> None:
    for path in ("/v1/ui/", "/v1/ui/swagger-ui.css"):
        response = web.post(path)
        assert response.status_code == 405 and response.headers["allow"] == "GET, HEAD", path
        assert response.json()["code"] == "method_not_allowed" and response.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize(
    "path",
    ["/tenant-a/oauth2/authorize/", "/tenant-a/jwks/", "/tenant-a/.well-known/openid-configuration/",
     "/v1/menus/dishes/", "/healthz/", "/tenant-a/ui", "/v1/ui", "/ops/ui", "/v1/", "/tenant-a/"],
)  # fmt: skip
def test_a_trailing_slash_or_a_missing_one_is_404_never_a_redirect(web: TestClient, path: str) -> None:
    response = web.get(path, headers={"Host": "attacker.example", "Authorization": "Bearer rmk_x"})
    assert response.status_code in (401, 404) and "location" not in response.headers
    if not path.startswith("/v1/menus"):
        assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_docs_off_turns_every_document_and_page_off(settings: Settings, engine: object) -> None:
    with TestClient(make_app(settings.with_changes(docs=False)), follow_redirects=False) as web:
        for path in ("/v1/openapi.json", "/v1/openapi.yaml", "/v1/ui/", "/v1/ui/swagger-ui.css",
                     "/tenant-a/openapi.json", "/tenant-a/ui/", "/ops/openapi.yaml", "/ops/ui/index.html"):  # fmt: skip
            response = web.get(path)
            assert response.status_code == 404 and response.json()["code"] == "not_found", path
        assert web.get("/healthz").status_code == 200
        assert web.get("/tenant-a/jwks").status_code == 200


def test_docs_setting_reads_on_and_off_only() -> None:
    assert Settings.from_env({"MENUS_DOCS": "off"}).docs is False
    assert Settings.from_env({}).docs is True
    with pytest.raises(ValueError, match="MENUS_DOCS must be on or off"):
        Settings.from_env({"MENUS_DOCS": "no"})


def test_both_forms_of_each_document_are_routes_of_their_own_for_metrics_and_logs() -> None:
    routes = RouteTemplates(
        [("menus.yaml", "/v1", "/v1"), ("operations.yaml", "", "/ops")], cached_paths=DEFAULTS.route_cache_paths
    )
    for path in ("/v1/openapi.json", "/v1/openapi.yaml", "/ops/openapi.json", "/ops/openapi.yaml"):
        assert routes.template(path) == path
    assert routes.template("/v1/openapi.yml") == UNMATCHED
