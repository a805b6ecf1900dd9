"""Connexion 3.3, adapted to this service: every hook into its internals is in this one module.

``connexion_app(contract, ...)`` builds each API's Connexion app (menus, identity, operations,
console) from its ``Contract``: routing and request validation from the document, the handlers
found by operationId, response validation when asked for. What it changes, and why:

- **No security middleware.** The menus gate authenticates before routing (``service.menus_api.gate``);
  the identity handlers authenticate clients and tokens themselves (an optional security alternative
  would let wrong credentials through as anonymous); the operations and console documents declare none.
- **No response validation middleware in production.** Without ``validate_responses`` it would only route each
  request once more; the tests build the apps with it (``middlewares``, as below: a documented option).
- **No Swagger UI middleware.** The documentation step at the edge serves each API's documents and Swagger UI
  (``service.web.api_docs``, ``service.web.swagger_ui``) before Connexion sees the request; Connexion's
  middleware would route every request through a router of its own first, and build a Jinja environment.
- **No lifespan middleware.** The app's dispatcher answers the ASGI lifespan itself (``service/app.py``) and no
  Connexion app is given a ``lifespan``: Connexion's middleware would only hand each request on.
- **Request validation made once per operation** (``_OnceValidation``, in the middleware list in place of
  Connexion's ``RequestValidationMiddleware``): Connexion 3.3 builds two URI parsers, the parameter and body
  validators and a ``MediaTypeDict`` of the accepted media types, and looks the body's definition up four times,
  on every request; here each is made once per operation (the body validator once per media type and charset,
  for a few), and the checks are Connexion's, in its order. Measured on an introspection
  (``python -m bench.request_cost``): docs/performance.md, "Per-request CPU in process".
- **Handlers decorated once** (``_OnceOperation``). Connexion 3.3's ``AsyncOperation.fn`` builds the
  parameter and response decorators, inspects the handler's signature and makes a URI parser on every
  request; none of it depends on the request. Measured on the menus API's unique queries, that was
  about a sixth of the service's time, and the second parse of the query another sixth.
- **The contract's parameter, form and JSON rules** in place of Connexion's validators, through its documented
  ``validator_map`` (``service.web.contract_validators``: not hooks, and nothing upstream to remove); the
  operationId their rules are kept by is read here (``_routed_operation``).
- **Response validation without the gate's headers**: the menus gate adds ``ETag``, ``Cache-Control``
  and the ``RateLimit-*`` headers after Connexion's response validation has run (validation sees the
  response before any outer layer changes it, as spec-first/connexion#793 describes for Flask), so
  Connexion's copy of the document leaves them out (``Contract.specification(without_response_headers=
  ...)``); the tests check them end to end. No Connexion class is changed for it, and Connexion never
  serves its copy (``Documentation`` answers the document paths with the document as written).
- **No second validation of the document at start.** Connexion checks every document it is given against the
  OpenAPI 3.0 schema (``Specification._validate_spec``, with jsonschema): about 0.3 s of a worker's start-up
  for the four documents, more than half of it. The documents are checked before they ship
  (``openapi-spec-validator`` and ``redocly lint`` in CI, and tests/unit/test_web_contracts.py runs Connexion's
  own check on each), and a worker reads them from its package, never from a user; so ``connexion_app`` gives
  Connexion a specification of a subclass that skips it (``_CheckedBeforeShipping``), through
  ``_ContractMiddleware.add_api``.

Nothing here assigns to an attribute of a Connexion module or class: each change is a subclass of a class Connexion
exports from its packages (``connexion``: ``AsyncApi``, ``ConnexionMiddleware``; ``connexion.middleware``:
``SpecMiddleware``; ``connexion.decorators``: ``StarletteDecorator``), an object given through a documented option
(``middlewares``, ``validator_map``, ``resolver``), a subclass of one of Connexion's default middlewares given in
its place through ``middlewares`` (``connexion.middleware.request_validation.RequestValidationMiddleware`` with its
API and operation classes;
Connexion's "Customizing the middleware stack" imports its middlewares from such modules, as
``connexion.middleware.security.SecurityMiddleware``, and no package re-exports them), or, for the document check
alone, a subclass of the specification class Connexion builds (``connexion.spec.OpenAPISpecification``, which no
package exports). Each hook into a private part of Connexion below says why, and names the upstream issue whose
fix would remove it. Checked against Connexion 3.3.0
(``uv.lock``); a new release means re-reading ``connexion/apps/asynchronous.py``, ``connexion/middleware/main.py``,
``connexion/middleware/abstract.py``, ``connexion/decorators/main.py`` and
``connexion/middleware/request_validation.py``; tests/unit/test_connexion_adapter.py checks what each hook
relies on.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from connexion import AsyncApi
from connexion.context import receive, scope
from connexion.datastructures import MediaTypeDict
from connexion.decorators import StarletteDecorator
from connexion.exceptions import UnsupportedMediaTypeProblem
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from connexion.middleware import ConnexionMiddleware, SpecMiddleware
from connexion.middleware.abstract import ROUTING_CONTEXT
from connexion.middleware.lifespan import LifespanMiddleware
from connexion.middleware.main import API
from connexion.middleware.request_validation import (
    RequestValidationAPI,
    RequestValidationMiddleware,
    RequestValidationOperation,
)
from connexion.middleware.response_validation import ResponseValidationMiddleware
from connexion.middleware.security import SecurityMiddleware
from connexion.middleware.swagger_ui import SwaggerUIMiddleware
from connexion.operations import AbstractOperation
from connexion.resolver import Resolver
from connexion.spec import OpenAPISpecification
from connexion.uri_parsing import AbstractURIParser
from connexion.utils import is_nullable
from starlette.responses import Response as StarletteResponse
from starlette.routing import Router
from starlette.types import Receive, Scope, Send

from service.web.contract_validators import BODY_VALIDATORS, REFERENCE_BODY_VALIDATORS, ContractParameters
from service.web.contracts import Contract
from service.web.request_parts import content_type

ErrorHandler = Callable[[ConnexionRequest, Exception], ConnexionResponse | Awaitable[ConnexionResponse]]

# Connexion's form validator logs each invalid form at ERROR with the offending value (a client secret, a token, a
# 60 KiB state). ``contract_validators.ContractForm`` replaces its validation, so it no longer logs; the line stays
# as a guard should a form ever reach Connexion's own validator. spec-first/connexion#1926 lowered the JSON body
# validator's message to INFO; the same change in connexion/validators/form_data.py (3.3.0) would remove this line.
logging.getLogger("connexion.validators.form_data").setLevel(logging.CRITICAL)


def connexion_app(
    contract: Contract,
    *,
    base_path: str,
    strict_validation: bool,
    errors: Iterable[tuple[type[Exception], ErrorHandler]] = (),
    validate_responses: bool = False,
    contract_parameters: bool = False,
    without_response_headers: Collection[str] = (),
    resolver: Resolver | None = None,
    fast_forms: bool = True,
    routed_first: Sequence[str] = (),
) -> ConnexionMiddleware:
    """The Connexion app of ``contract`` at ``base_path`` ("" for the root: "/" breaks every operation).

    ``errors``: ``(exception class, handler)`` pairs for Connexion's error handling, in order (more may be
    added with the app's ``add_error_handler`` until its first request);
    ``contract_parameters``: validate parameters with the contract's rules (the menus API's voice) instead
    of Connexion's; ``without_response_headers`` (lower case): response headers that a layer outside
    Connexion adds, left out of response validation; ``fast_forms``: plain forms the contract's rules prove
    valid skip Connexion's parse (``contract_validators.ContractForm``), and the validators are made once per operation
    (``_OnceValidation``); False: every form takes Connexion's way, through Connexion's own validation
    middleware (the reference of tests/api/test_form_parsers.py); ``routed_first``: plain paths Connexion's
    router tries first, the most requested (``Contract.specification``)."""
    # Without response validation (production), its middleware would only route each request once more.
    middlewares = [m for m in MIDDLEWARES if validate_responses or m is not ResponseValidationMiddleware]
    if not fast_forms:
        middlewares = [RequestValidationMiddleware if m is _OnceValidation else m for m in middlewares]
    app = _ContractMiddleware(_OnceOperations(), import_name=__name__, middlewares=middlewares)
    validator_map: dict[str, Any] = {"body": BODY_VALIDATORS if fast_forms else REFERENCE_BODY_VALIDATORS}
    if contract_parameters:
        validator_map["parameter"] = ContractParameters(_routed_operation)
    app.add_api(
        _checked_specification(contract, base_path, frozenset(without_response_headers), tuple(routed_first)),
        base_path=base_path,
        strict_validation=strict_validation,
        validate_responses=validate_responses,
        validator_map=validator_map,
        resolver=resolver,
    )
    for error, handler in errors:
        app.add_error_handler(error, handler)
    return app


class _CheckedBeforeShipping(OpenAPISpecification):  # type: ignore[misc]  # connexion ships without type hints
    """Connexion's specification of an OpenAPI 3 document, made without checking it against the OpenAPI schema.

    Private hook: ``_validate_spec``, the class method ``Specification.__init__`` calls, overridden in this
    subclass alone (Connexion's own class is left as it is). Connexion 3.3 has no option to skip the check:
    spec-first/connexion#306 asked for one (a document that does not change in production need not be checked
    at every start; closed without it), and spec-first/connexion#1801 reports Connexion 3's slower cold start
    (closed). An ``add_api`` option to skip it, or ``add_api`` accepting a ready ``Specification``, would
    remove this class and ``_ContractMiddleware``."""

    @classmethod
    def _validate_spec(cls, spec: Mapping[str, Any]) -> None:
        return None  # checked before shipping: tests/unit/test_web_contracts.py runs Connexion's own check


class _ContractMiddleware(ConnexionMiddleware):  # type: ignore[misc]
    """``ConnexionMiddleware`` whose ``add_api`` takes a document as a mapping and builds its specification as
    ``_CheckedBeforeShipping``.

    Connexion's ``add_api`` loads every document through ``Specification.load``, which picks the specification
    class itself; this override does what it does for a mapping, with the other class. Private hooks:
    ``middleware_stack`` (None until the first request), ``options`` (the app's defaults, with ``replace``),
    ``apis`` and ``connexion.middleware.main.API`` (the list of documents the middleware stack is built from).
    Removed by the upstream change ``_CheckedBeforeShipping`` names."""

    def add_api(self, specification: _CheckedBeforeShipping, *, base_path: str, **options: Any) -> None:
        if self.middleware_stack is not None:
            raise RuntimeError("Cannot add api after an application has started")
        self.apis.append(API(specification, base_path=base_path, name=None, **self.options.replace(**options).__dict__))


@functools.cache
def _checked_specification(
    contract: Contract, base_path: str, without_response_headers: frozenset[str], routed_first: tuple[str, ...]
) -> _CheckedBeforeShipping:
    """Connexion's specification of ``contract`` as these options shape it, made once per process and shared by
    every app built with the same options (tests build an app per test; each spent about 0.1 s of CPU copying the
    three documents three times and resolving their references). Sharing is safe because Connexion only reads a
    specification once it is made: its APIs set ``base_path`` (part of the key, so always to the same value) and
    its Swagger UI serves a ``clone``."""
    document = contract.specification(without_response_headers=without_response_headers, routed_first=routed_first)
    return _CheckedBeforeShipping(_string_keys(document))


def _string_keys(value: Any) -> Any:
    """``value`` with every mapping key a string (YAML's ``200:`` is an integer), as Connexion's ``from_dict``."""
    if isinstance(value, Mapping):
        return {str(key): _string_keys(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_string_keys(item) for item in value]
    return value


def _routed_operation(scope: Scope) -> str:
    """The operationId Connexion's routing put in the scope, the key it dispatches the request to the operation by
    (``ROUTING_CONTEXT``: an internal of its middleware, stable since 3.0), for ``ContractParameters``' rules kept
    by operation. Nothing to remove upstream: routing hands it to every middleware after it the same way."""
    operation_id: str = scope["extensions"][ROUTING_CONTEXT]["operation_id"]
    return operation_id


class _OnceValidationOperation(RequestValidationOperation):  # type: ignore[misc]
    """Connexion's request validation of one operation, with what it makes on every request made once.

    Connexion 3.3's ``RequestValidationOperation.__call__`` builds, for every request, two URI parsers, the
    parameter validator, a ``MediaTypeDict`` of the accepted media types, and the body validator, and works out
    the body's definition from the document four times (each a ``MediaTypeDict`` lookup by ``fnmatch``); none of
    it depends on the request but its media type and charset. Here the parameter validator is made at the first
    request, the body validator once per (media type, charset) seen and the media type's test once per media
    type, for at most ``_KEPT`` of each (a client names them: any more are made per request, as Connexion
    does); the validators are those of the ``validator_map``, called as Connexion calls them, and keep nothing
    of a request (Connexion's and ours alike). The checks, their order and their errors are Connexion's: the
    parameters, then the media type (415), then the body.

    Private hooks: the constructor's ``_operation`` and ``_validator_map`` (what Connexion's own ``__call__``
    reads), ``strict_validation`` and ``security_query_params``; ``RequestValidationAPI.make_operation``, the
    method its base class declares for subclasses to make their operations. Upstream, validators made once per
    operation would remove this class: spec-first/connexion#2045 and #2077 report Connexion 3's per-request cost
    (open; no fix released as of 3.3.0); we found no issue about the validators in particular."""

    @functools.cached_property
    def _parameters(self) -> Any:
        operation = self._operation
        return self._validator_map["parameter"](
            operation.parameters,
            uri_parser=operation.uri_parser_class(operation.parameters, operation.body_definition()),
            strict_validation=self.strict_validation,
            security_query_params=self.security_query_params,
        )

    @functools.cached_property
    def _accepted(self) -> MediaTypeDict:
        return MediaTypeDict([(c.lower(), None) for c in self._operation.consumes])

    @functools.cached_property
    def _answers(self) -> dict[str, bool]:
        return {}  # media type as sent: accepted (at most ``_KEPT``)

    @functools.cached_property
    def _bodies(self) -> dict[tuple[str, str], Any]:
        return {}  # (media type, charset): the body validator (at most ``_KEPT``)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self._parameters.validate(scope)
        mime_type, encoding = content_type(scope["headers"], self._operation.consumes)
        self.validate_mime_type(mime_type)
        validator = self._body_validator(mime_type, encoding)
        if validator is _UNVALIDATED:
            _validation_logger.info(
                f"Skipping validation. No validator registered for content type: {mime_type}."  # Connexion's words
            )
        elif validator is not None:
            receive, scope = await validator.wrap_receive(receive, scope=scope)
        await self.next_app(scope, receive, send)

    def validate_mime_type(self, mime_type: str) -> None:
        consumes = self._operation.consumes
        if not consumes:
            return
        accepted = self._answers.get(mime_type)
        if accepted is None:
            accepted = mime_type.lower() in self._accepted  # Connexion's test: media ranges, by ``fnmatch``
            if len(self._answers) < _KEPT:
                self._answers[mime_type] = accepted
        if not accepted:
            raise UnsupportedMediaTypeProblem(detail=f"Invalid Content-type ({mime_type}), expected {consumes}")

    def _body_validator(self, mime_type: str, encoding: str) -> Any:
        """The body validator for this media type and charset (None: no body schema; ``_UNVALIDATED``: none
        registered for the media type), as Connexion makes it."""
        kept = self._bodies.get((mime_type, encoding), _NOT_KEPT)
        if kept is not _NOT_KEPT:
            return kept
        operation = self._operation
        validator: Any = None
        schema = operation.body_schema(mime_type)
        if schema:
            try:
                body_validator = self._validator_map["body"][mime_type]
            except KeyError:
                validator = _UNVALIDATED
            else:
                validator = body_validator(
                    schema=schema,
                    required=operation.request_body.get("required", False),
                    nullable=is_nullable(operation.body_definition(mime_type)),
                    encoding=encoding,
                    strict_validation=self.strict_validation,
                    uri_parser=operation.uri_parser_class(operation.parameters, operation.body_definition()),
                )
        if len(self._bodies) < _KEPT:
            self._bodies[(mime_type, encoding)] = validator
        return validator


_KEPT = 8  # body validators kept per operation: one per (media type, charset) a client sent, the first ones
_NOT_KEPT = object()
_UNVALIDATED = object()  # a body schema, but no validator registered for the media type: Connexion skips it
_validation_logger = logging.getLogger("connexion.middleware.validation")  # the logger Connexion's validation uses


class _OnceValidationApi(RequestValidationAPI):  # type: ignore[misc]
    def make_operation(self, operation: AbstractOperation) -> _OnceValidationOperation:
        return _OnceValidationOperation(
            self.next_app,
            operation=operation,
            strict_validation=self.strict_validation,
            validator_map=self.validator_map,
        )


class _OnceValidation(RequestValidationMiddleware):  # type: ignore[misc]
    """Connexion's request validation middleware, its operations ``_OnceValidationOperation``s: in the middleware
    list in its place (Connexion's documented "Customizing the middleware stack")."""

    api_cls = _OnceValidationApi


# Connexion's own stack, minus its security, Swagger UI and lifespan middlewares, with its request validation made
# once per operation (``_OnceValidation``). A public, documented option (``middlewares``: "Customizing the middleware
# stack").
MIDDLEWARES = [
    _OnceValidation if m is RequestValidationMiddleware else m
    for m in ConnexionMiddleware.default_middlewares
    if m not in (SecurityMiddleware, SwaggerUIMiddleware, LifespanMiddleware)
]


class _OnceDecorator(StarletteDecorator):  # type: ignore[misc]  # connexion ships without type hints
    """``StarletteDecorator`` that decorates at once and builds the operation's URI parser on first use.

    A handler that takes no arguments skips the parameter decorator, which would parse the query and the body
    only to pass none of it, and Connexion's request object, which nothing would read: such handlers read what
    they need from the request state.

    Private hooks: ``_sync_async_decorator`` and ``_response_decorator_cls`` (the two halves of
    ``StarletteDecorator.decorate`` it uses without the parameter half), and ``uri_parser`` (a property
    reading the operation from Connexion's request context). Upstream, decorating once per operation would
    remove the whole class: Connexion 3.3 decorates on every request (``AsyncOperation.fn``); the general
    per-request cost of Connexion 3 is reported in spec-first/connexion#2045 and #2077 (both open, about the
    FlaskApp; no fix released as of 3.3.0), and we found no issue asking for this change in particular.
    """

    def decorate(self, function: Callable[..., Any]) -> Callable[..., Any]:
        if _takes_arguments(function):
            decorated: Callable[..., Any] = super().decorate(function)
            return decorated
        # A coroutine handler is awaited as it is: ``_sync_async_decorator``'s wrapper would ask, on every call,
        # whether it is one (and otherwise run it in Starlette's thread pool, as it still does here).
        bare = function if asyncio.iscoroutinefunction(function) else self._sync_async_decorator(function)
        respond = self._response_decorator_cls(framework=self.framework, jsonifier=self.jsonifier)
        bare_decorated: Callable[..., Any] = respond(lambda _: bare())
        return bare_decorated

    def __call__(self, function: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
        decorated = self.decorate(function)
        if not _takes_arguments(function):  # nothing reads Connexion's request: none is made

            @functools.wraps(function)
            async def bare_wrapper(*_: Any, **__: Any) -> Any:
                return await decorated(None)

            return bare_wrapper
        parser: AbstractURIParser | None = None

        @functools.wraps(function)
        async def wrapper(*_: Any, **__: Any) -> Any:
            nonlocal parser
            if parser is None:  # made from the context's operation: this route's, the same on every request
                parser = self.uri_parser
            request = self.framework.get_request(uri_parser=parser, scope=scope, receive=receive)
            return await decorated(request)

        return wrapper


def _takes_arguments(function: Callable[..., Any]) -> bool:
    return bool(inspect.signature(inspect.unwrap(function)).parameters)


class _OnceOperation:
    """One operation of an API: its handler, decorated once (on the first request) instead of on every request as
    Connexion's ``AsyncOperation.fn`` does. What Connexion's routed middleware needs of an operation: its
    ``operation_id`` and to be called with the request. Removed by the same upstream change as
    ``_OnceDecorator``."""

    def __init__(self, function: Callable[..., Any], operation_id: str, *, pythonic_params: bool, jsonifier: Any):
        self._function = function
        self.operation_id = operation_id
        self._pythonic_params = pythonic_params
        self._jsonifier = jsonifier
        functools.update_wrapper(self, function)

    @functools.cached_property
    def fn(self) -> Callable[..., Awaitable[StarletteResponse]]:
        return _OnceDecorator(pythonic_params=self._pythonic_params, jsonifier=self._jsonifier)(self._function)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.fn()
        await response(scope, receive, send)


class _OnceApi(AsyncApi):  # type: ignore[misc]
    """Connexion's ``AsyncApi`` (exported by ``connexion``), making ``_OnceOperation``s: ``make_operation`` is
    the method its base class declares for subclasses to make their operations."""

    def make_operation(self, operation: AbstractOperation) -> _OnceOperation:
        return _OnceOperation(
            operation.function,
            operation.operation_id,
            pythonic_params=self.pythonic_params,
            jsonifier=self.jsonifier,
        )


class _OnceOperations(SpecMiddleware):  # type: ignore[misc]
    """The innermost app of ``ConnexionMiddleware``, as ``connexion.AsyncApp`` has its own: each document's
    ``_OnceApi``, and each request handed to the operation Connexion's routing found for it.

    A ``SpecMiddleware`` (``connexion.middleware``'s base class for what takes the documents): the middleware
    stack calls ``add_api`` with each document at the first request. Routing is Connexion's (its routing
    middleware, earlier in the stack, puts the document's base path and the operationId in the scope under
    ``ROUTING_CONTEXT``, a constant of ``connexion.middleware.abstract``); this dispatches on them as
    Connexion's ``RoutedMiddleware`` does. A request no operation matched goes to a router of each document's
    (empty) routes, as in ``connexion.AsyncApp``: Starlette's 404."""

    def __init__(self) -> None:
        self.apis: dict[str, list[_OnceApi]] = defaultdict(list)
        self.router = Router()

    def add_api(self, specification: Any, **kwargs: Any) -> _OnceApi:
        kwargs.pop("name", None)  # the APIs are mounted by base path alone
        api = _OnceApi(specification, next_app=self.router, **kwargs)
        self.apis[api.base_path].append(api)
        self.router.mount(api.base_path, api.router)
        return api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            context = scope["extensions"][ROUTING_CONTEXT]
            operation_id = context.get("operation_id")
            apis = self.apis.get(context.get("api_base_path"), ())
            for api in apis:
                operation = api.operations.get(operation_id)
                if operation is not None:
                    await operation(scope, receive, send)
                    return
            if apis and operation_id is not None:
                raise LookupError(f"no operation {operation_id!r}")  # as Connexion's MissingOperation
        await self.router(scope, receive, send)


def as_connexion(response: StarletteResponse) -> ConnexionResponse:
    """An error handler's answer in the form Connexion's error handling takes (it makes a response of it again)."""
    headers = {k: v for k, v in response.headers.items() if k not in ("content-length", "content-type")}
    return ConnexionResponse(
        status_code=response.status_code, mimetype=response.media_type, body=response.body, headers=headers
    )
