"""What service/web/connexion_adapter.py relies on in Connexion 3.3, and what it does with it. Each hook into a
private part of Connexion is checked here by name, so that an upgrade that moves one fails here first (then re-read
the module's docstring and the upstream issue it names); and no hook changes a class of Connexion's."""

from __future__ import annotations

import asyncio
import copy
import inspect
from typing import Any

import pytest
from connexion import AsyncApi
from connexion.decorators import StarletteDecorator
from connexion.exceptions import InvalidSpecification
from connexion.middleware import ConnexionMiddleware, SpecMiddleware
from connexion.middleware.abstract import ROUTING_CONTEXT
from connexion.middleware.main import API
from connexion.middleware.request_validation import (
    RequestValidationAPI,
    RequestValidationMiddleware,
    RequestValidationOperation,
)
from connexion.resolver import RelativeResolver
from connexion.spec import OpenAPISpecification, Specification
from connexion.validators import FormDataValidator
from starlette.responses import Response
from starlette.testclient import TestClient

from service.web import connexion_adapter
from service.web.contract_validators import ContractForm
from service.web.contracts import contract
from service.web.request_parts import content_type


def test_connexion_s_add_api_and_its_middleware_state_are_what_the_override_replaces() -> None:
    """``_ContractMiddleware.add_api`` does what Connexion's does for a mapping: the state it writes must be there."""
    middleware = ConnexionMiddleware(lambda *_: None, import_name=__name__)
    assert middleware.middleware_stack is None
    assert middleware.apis == []
    options = middleware.options.replace(strict_validation=True, validator_map=None)
    assert options.strict_validation is True
    api = API({"a": 1}, base_path="/b", name=None, **options.__dict__)
    assert (api.specification, api.base_path) == ({"a": 1}, "/b")
    assert api.kwargs["strict_validation"] is True
    source = inspect.getsource(ConnexionMiddleware.add_api)
    assert "Specification.load(" in source and "self.apis.append(" in source


def test_connexion_checks_a_document_in_the_specification_s_constructor_through_validate_spec() -> None:
    assert "self._validate_spec(raw_spec)" in inspect.getsource(Specification.__init__)
    broken = {"openapi": "3.0.3", "info": {"title": "t"}, "paths": {}}  # info without a version
    with pytest.raises(InvalidSpecification):
        OpenAPISpecification(copy.deepcopy(broken))
    assert connexion_adapter._CheckedBeforeShipping(copy.deepcopy(broken))["info"] == {"title": "t"}


def test_building_an_app_changes_no_class_of_connexion_s() -> None:
    classes = (
        OpenAPISpecification,
        Specification,
        ConnexionMiddleware,
        AsyncApi,
        RequestValidationMiddleware,
        RequestValidationAPI,
        RequestValidationOperation,
    )
    before = {cls: dict(vars(cls)) for cls in classes}
    app = connexion_adapter.connexion_app(contract("operations.yaml"), base_path="", strict_validation=True)
    with TestClient(app) as client:
        assert client.get("/healthz").status_code == 200
    assert {cls: dict(vars(cls)) for cls in before} == before


def test_the_decorator_hooks_are_where_starlette_decorator_keeps_them() -> None:
    """``_OnceDecorator`` uses the two halves of ``StarletteDecorator.decorate`` and its ``uri_parser``."""
    for name in ("_sync_async_decorator", "_response_decorator_cls", "uri_parser", "decorate", "framework"):
        assert hasattr(StarletteDecorator, name), f"connexion's StarletteDecorator has no {name} now"
    decorator = StarletteDecorator(pythonic_params=False, jsonifier=None)
    assert callable(decorator._sync_async_decorator)


def test_an_api_makes_its_operations_through_make_operation_and_keeps_them_by_operation_id() -> None:
    assert "make_operation" in vars(AsyncApi)
    assert "self.operations[operation.operation_id] = routed_operation" in inspect.getsource(
        AsyncApi.__mro__[1].add_operation
    )
    assert ROUTING_CONTEXT == "connexion_routing"
    assert issubclass(connexion_adapter._OnceOperations, SpecMiddleware)


def test_the_form_validator_keeps_its_arguments_where_contract_form_reads_them() -> None:
    validator: Any = FormDataValidator(
        schema={"type": "object"}, required=True, encoding="utf-8", strict_validation=True
    )
    assert (validator._schema, validator._required, validator._strict_validation) == ({"type": "object"}, True, True)
    assert "_validate" in vars(FormDataValidator.__mro__[1]) or "_validate" in vars(FormDataValidator)
    assert inspect.iscoroutinefunction(FormDataValidator.wrap_receive)


def test_a_handler_is_decorated_once_not_on_every_request() -> None:
    def handler() -> str:
        return "ok"

    operation = connexion_adapter._OnceOperation(handler, "handler", pythonic_params=False, jsonifier=None)
    assert operation.operation_id == "handler"
    assert operation.fn is operation.fn


def test_connexion_s_request_validation_makes_what_once_validation_keeps_on_every_request() -> None:
    """``_OnceValidationOperation`` does what ``RequestValidationOperation.__call__`` does, in its order, with the
    state its constructor keeps; ``RequestValidationAPI`` makes its operations through ``make_operation``."""
    source = inspect.getsource(RequestValidationOperation.__call__)
    steps = [
        "parameter_validator.validate(scope)",
        "self.extract_content_type(headers)",
        "self.validate_mime_type(mime_type)",
        "self._operation.body_schema(mime_type)",
        'self._validator_map["body"][mime_type]',
        "await validator.wrap_receive(receive, scope=scope)",
        "await self.next_app(scope, receive, send)",
    ]
    places = [source.index(step) for step in steps]
    assert places == sorted(places)
    init = inspect.getsource(RequestValidationOperation.__init__)
    assert "self._operation = operation" in init and "self._validator_map.update(validator_map or {})" in init
    assert "make_operation" in vars(RequestValidationAPI)
    assert connexion_adapter._OnceValidation.api_cls is connexion_adapter._OnceValidationApi
    assert RequestValidationMiddleware in ConnexionMiddleware.default_middlewares
    assert connexion_adapter._OnceValidation in connexion_adapter.MIDDLEWARES
    assert RequestValidationMiddleware not in connexion_adapter.MIDDLEWARES


@pytest.mark.parametrize(
    "headers",
    [
        [],
        [(b"content-type", b"application/x-www-form-urlencoded")],
        [(b"Content-Type", b"text/plain; charset=latin-1")],
        [(b"host", b"a"), (b"CONTENT-TYPE", b"a/b;charset=x;y=z"), (b"content-type", b"c/d")],
        [(b"content-type", b"a/b; charset=x")],
        [(b"content-type", b"")],
        [(b"content-type", b"\xe9/\xff")],
    ],
)
@pytest.mark.parametrize("consumes", [[], ["application/x-www-form-urlencoded", "text/plain"]])
def test_the_content_type_is_read_as_connexion_reads_it(
    headers: list[tuple[bytes, bytes]], consumes: list[str]
) -> None:
    class Operation:
        pass

    operation: Any = Operation()
    operation.consumes = consumes
    connexion = RequestValidationOperation(lambda *_: None, operation=operation)
    assert content_type(headers, consumes) == connexion.extract_content_type(headers)


def test_an_operation_s_validators_are_made_once_and_kept_for_a_few_media_types_only() -> None:
    app = connexion_adapter.connexion_app(
        contract("identity.yaml"), base_path="", strict_validation=False, resolver=RelativeResolver("handlers")
    )
    with TestClient(app, raise_server_exceptions=False) as client:
        for n in range(3 * connexion_adapter._KEPT):
            charset = n % (2 * connexion_adapter._KEPT)
            headers = {"content-type": f"application/x-www-form-urlencoded;charset=x-{charset}"}
            assert client.post("/oauth2/introspect", content=b"tokens=x", headers=headers).status_code == 400
    validation = next(m for m in app.middleware_stack if isinstance(m, connexion_adapter._OnceValidation))
    operation = validation.apis[""][0].operations["handlers.introspection.introspect"]
    assert len(operation._bodies) == connexion_adapter._KEPT
    assert operation._parameters is operation._parameters
    kept = operation._bodies[("application/x-www-form-urlencoded", "x-0")]
    assert isinstance(kept, ContractForm)
    assert operation._body_validator("application/x-www-form-urlencoded", "x-0") is kept


def test_a_handler_without_arguments_is_called_without_connexion_s_request() -> None:
    """No request object is made for it (it would need Connexion's request context), and a coroutine handler is
    awaited as it is; a plain function still runs in Starlette's thread pool, as Connexion runs it."""

    async def coroutine_handler() -> Response:
        return Response(b"a")

    def function_handler() -> Response:
        return Response(b"b")

    decorator = connexion_adapter._OnceDecorator(pythonic_params=False, jsonifier=None)
    answers = [asyncio.run(decorator(handler)()) for handler in (coroutine_handler, function_handler)]
    assert [answer.body for answer in answers] == [b"a", b"b"]
