"""The contracts as the service reads them: one parse per document, and what each hands out."""

import pytest

from service.identity_api.identity_app import CLIENT_ENDPOINTS
from service.menus_api.gate import ADDED_HEADERS, CATALOG
from service.web.contracts import Contract, authored, contract


def test_each_document_is_parsed_once_and_kept_as_written():
    assert contract("menus.yaml") is contract("menus.yaml")
    assert contract("identity.yaml").document == authored("identity.yaml")


def test_an_operation_is_found_by_method_and_template_with_its_extensions():
    identity = contract("identity.yaml")
    assert identity.operation("POST", "/oauth2/token")["operationId"] == "token.exchange"
    assert identity.template_of("/tenant")("/tenant/oauth2/token") == "/oauth2/token"
    assert identity.template_of("/tenant")("/elsewhere") is None


def test_allowed_methods_add_head_wherever_get_is():
    allowed = contract("menus.yaml").allowed_methods("/v1")
    assert allowed("/v1/menus/dishes/creme-brulee") == ["GET", "HEAD"]
    assert allowed("/v1/nothing") == []


def test_connexions_copy_leaves_out_the_gates_headers_and_the_document_keeps_them():
    menus = contract("menus.yaml")
    copy = menus.specification(without_response_headers=ADDED_HEADERS)
    ok = copy["paths"]["/menus/regions"]["get"]["responses"]["200"]
    assert not {name.lower() for name in ok.get("headers", {})} & ADDED_HEADERS
    written = menus.document["paths"]["/menus/regions"]["get"]["responses"]["200"]["headers"]
    assert "ETag" in written


def test_connexions_copy_routes_the_client_endpoints_first_and_keeps_every_other_path_in_order():
    identity = contract("identity.yaml")
    paths = list(identity.specification(routed_first=CLIENT_ENDPOINTS)["paths"])
    assert paths[: len(CLIENT_ENDPOINTS)] == list(CLIENT_ENDPOINTS)
    assert paths[len(CLIENT_ENDPOINTS) :] == [path for path in identity.templates if path not in CLIENT_ENDPOINTS]
    assert list(identity.document["paths"]) == identity.templates  # the document as written is left as it is


@pytest.mark.parametrize("path", ["/a/{id}", "/a/b", "/missing"])
def test_only_a_plain_path_no_template_matches_may_be_routed_first(path: str) -> None:
    """A route put first must answer only its own path: a template, a path a template matches (Starlette would
    have routed it to the template before), or no path of the document, is refused."""
    document = {"paths": {"/a/{id}": {}, "/a/b": {}, "/c": {}}}
    with pytest.raises(ValueError, match="cannot be routed first"):
        Contract("x.yaml", document).specification(routed_first=[path])
    assert list(Contract("x.yaml", document).specification(routed_first=["/c"])["paths"]) == ["/c", "/a/{id}", "/a/b"]


def test_a_slot_gives_back_what_was_put_in_the_request_state():
    scope: dict[str, object] = {"type": "http"}
    CATALOG.put(scope, "the catalog")
    assert CATALOG.get(scope) == "the catalog"


def test_each_document_passes_connexions_own_check_which_a_worker_skips_at_start():
    """Connexion's check of a document against the OpenAPI schema runs here, not in every worker's start-up
    (service.web.connexion_adapter); building an app leaves Connexion's class as it was."""
    from connexion.spec import OpenAPISpecification

    from service.web.connexion_adapter import connexion_app

    for name in ("menus.yaml", "identity.yaml", "operations.yaml", "console.yaml", "management.yaml"):
        OpenAPISpecification._validate_spec(contract(name).specification())  # raises InvalidSpecification
    connexion_app(contract("operations.yaml"), base_path="", strict_validation=True)
    assert "_validate_spec" not in OpenAPISpecification.__dict__
