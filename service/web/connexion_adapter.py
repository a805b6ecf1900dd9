"""Connexion 3.3, adapted to this service: every use of its internals is in this one module.

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
- **Handlers decorated once** (``_OnceOperation``). Connexion 3.3's ``AsyncOperation.fn`` builds the
  parameter and response decorators, inspects the handler's signature and makes a URI parser on every
  request; none of it depends on the request. Measured on the menus API's unique queries, that was
  about a sixth of the service's time, and the second parse of the query another sixth.
- **The contract's parameter rules** (``service.web.validation.ParameterRules``) in place of
  Connexion's parameter validator, for the menus and operations APIs: one message per invalid
  parameter, by name, schemas compiled once per operation; the validated arguments go to the handlers
  (``request_state.ARGUMENTS``), so the query is parsed once.
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
- **The contract's form rules** (``service.web.validation.body_errors``) in place of Connexion's form
  validation: a missing body names its required fields, every refused field is named, in words, and no
  value or validator text is repeated (Connexion answers ``RequestBody is required`` and jsonschema's
  message, which quotes the value). Connexion's form parsing is kept, except for a body that the form's
  ``FormRules`` (``service.web.fast_forms``, derived from the same schema) proves valid: its pairs go to the
  handler as read (``request_state.FORM``), neither parsed again nor checked by jsonschema.

Nothing here assigns to an attribute of a Connexion module or class: each change is a subclass of a class Connexion
exports from its packages (``connexion``: ``AsyncApi``, ``ConnexionMiddleware``; ``connexion.middleware``:
``SpecMiddleware``; ``connexion.decorators``: ``StarletteDecorator``; ``connexion.validators``:
``FormDataValidator``), an object given through a documented option (``middlewares``, ``validator_map``,
``resolver``), or, for the document check alone, a subclass of the specification class Connexion builds
(``connexion.spec.OpenAPISpecification``, which no package exports). Each hook into a private part of Connexion
below says why, and names the upstream issue whose fix would remove it. Checked against Connexion 3.3.0
(``uv.lock``); a new release means re-reading ``connexion/apps/asynchronous.py``, ``connexion/middleware/main.py``,
``connexion/middleware/abstract.py``, ``connexion/decorators/main.py`` and
``connexion/middleware/request_validation.py``; tests/unit/test_connexion_adapter.py checks what each hook
relies on.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from connexion import AsyncApi
from connexion.context import receive, scope
from connexion.datastructures import MediaTypeDict
from connexion.decorators import StarletteDecorator
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from connexion.middleware import ConnexionMiddleware, SpecMiddleware
from connexion.middleware.abstract import ROUTING_CONTEXT
from connexion.middleware.main import API
from connexion.middleware.response_validation import ResponseValidationMiddleware
from connexion.middleware.security import SecurityMiddleware
from connexion.middleware.swagger_ui import SwaggerUIMiddleware
from connexion.operations import AbstractOperation
from connexion.resolver import Resolver
from connexion.spec import OpenAPISpecification
from connexion.uri_parsing import AbstractURIParser
from connexion.validators import VALIDATOR_MAP, FormDataValidator, JSONRequestBodyValidator
from starlette.datastructures import Headers
from starlette.responses import Response as StarletteResponse
from starlette.routing import Router
from starlette.types import Receive, Scope, Send

from service.web.contracts import Contract
from service.web.fast_forms import FormRules
from service.web.problems import invalid_parameters
from service.web.request_state import ARGUMENTS, FORM
from service.web.validation import ParameterRules, body_errors, missing_body, missing_json

ErrorHandler = Callable[[ConnexionRequest, Exception], ConnexionResponse | Awaitable[ConnexionResponse]]

# Connexion's own stack, minus its security and Swagger UI middlewares (see above). A public, documented option.
MIDDLEWARES = [m for m in ConnexionMiddleware.default_middlewares if m not in (SecurityMiddleware, SwaggerUIMiddleware)]

# Connexion's form validator logs each invalid form at ERROR with the offending value (a client secret, a token, a
# 60 KiB state). ``ContractForm`` replaces its validation, so it no longer logs; the line stays as a guard should a
# form ever reach Connexion's own validator. spec-first/connexion#1926 lowered the JSON body validator's message to
# INFO; the same change in connexion/validators/form_data.py (3.3.0) would remove this line.
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
) -> ConnexionMiddleware:
    """The Connexion app of ``contract`` at ``base_path`` ("" for the root: "/" breaks every operation).

    ``errors``: ``(exception class, handler)`` pairs for Connexion's error handling, in order (more may be
    added with the app's ``add_error_handler`` until its first request);
    ``contract_parameters``: validate parameters with the contract's rules (the menus API's voice) instead
    of Connexion's; ``without_response_headers`` (lower case): response headers that a layer outside
    Connexion adds, left out of response validation; ``fast_forms``: plain forms the contract's rules prove
    valid skip Connexion's parse (``ContractForm``; False: every form takes Connexion's way)."""
    # Without response validation (production), its middleware would only route each request once more.
    middlewares = [m for m in MIDDLEWARES if validate_responses or m is not ResponseValidationMiddleware]
    app = _ContractMiddleware(_OnceOperations(), import_name=__name__, middlewares=middlewares)
    validator_map: dict[str, Any] = {"body": _BODY_VALIDATORS if fast_forms else _REFERENCE_BODY_VALIDATORS}
    if contract_parameters:
        validator_map["parameter"] = ContractParameters()
    app.add_api(
        contract.specification(without_response_headers=without_response_headers),
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

    def add_api(self, specification: Mapping[str, Any], *, base_path: str, **options: Any) -> None:
        if self.middleware_stack is not None:
            raise RuntimeError("Cannot add api after an application has started")
        checked = _CheckedBeforeShipping(_string_keys(specification))
        self.apis.append(API(checked, base_path=base_path, name=None, **self.options.replace(**options).__dict__))


def _string_keys(value: Any) -> Any:
    """``value`` with every mapping key a string (YAML's ``200:`` is an integer), as Connexion's ``from_dict``."""
    if isinstance(value, Mapping):
        return {str(key): _string_keys(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_string_keys(item) for item in value]
    return value


class ContractParameters:
    """Connexion's ``validator_map["parameter"]``, one per app: the contract's rules, compiled once per operation.

    Connexion makes a parameter validator for every request, from the operation's parameter list, and calls
    its ``validate(scope)`` (``connexion/middleware/request_validation.py``). The rules are kept here by
    operationId, which Connexion's routing has put in the scope (the key it dispatches the request to the
    operation by, ``ROUTING_CONTEXT``: an internal of its middleware, stable since 3.0). Nothing to remove
    upstream: ``validator_map`` is Connexion's documented way to bring one's own validator."""

    def __init__(self) -> None:
        self._rules: dict[str, ParameterRules] = {}

    def __call__(
        self,
        parameters: list[dict[str, Any]],
        *,
        uri_parser: AbstractURIParser,
        strict_validation: bool = False,
        security_query_params: Iterable[str] = (),
    ) -> _ParameterValidation:
        return _ParameterValidation(self, parameters, uri_parser, strict_validation)

    def rules(self, operation_id: str, parameters: Iterable[Mapping[str, Any]]) -> ParameterRules:
        rules = self._rules.get(operation_id)
        if rules is None:
            rules = self._rules[operation_id] = ParameterRules(parameters)
        return rules


@dataclass(eq=False, slots=True)
class _ParameterValidation:
    """One request's parameter validation (what Connexion's ``ParameterValidator.validate`` does, by our rules)."""

    factory: ContractParameters
    parameters: list[dict[str, Any]]
    uri_parser: AbstractURIParser
    strict: bool

    def validate(self, scope: Scope) -> None:
        if not self.parameters and not self.strict:  # nothing to check (the token and introspection endpoints)
            ARGUMENTS.put(scope, {})
            return
        rules = self.factory.rules(scope["extensions"][ROUTING_CONTEXT]["operation_id"], self.parameters)
        request = ConnexionRequest(scope, uri_parser=self.uri_parser)
        arguments = rules.validate(
            query_string=scope.get("query_string", b"").decode("latin-1"),
            typed_query=lambda: request.query_params,
            path=request.path_params,
            headers=request.headers,
            cookies=request.cookies,
            strict=self.strict,
        )
        if arguments is not None:
            ARGUMENTS.put(scope, arguments)


class ContractForm(FormDataValidator):  # type: ignore[misc]  # connexion ships without type hints
    """Connexion's form validator with the contract's rules and words (``service.web.validation.body_errors``).

    Connexion parses the form (``FormDataValidator._parse``) and calls ``_validate(body)``, the methods its
    ``AbstractRequestBodyValidator`` documents for subclasses to override; a missing body is refused in
    ``wrap_receive`` before that, in words of its own (``RequestBody is required``), so the check is made here
    first. A plain form that the schema's ``FormRules`` proves valid (``service.web.fast_forms``) is read once,
    by those rules, and its pairs put in the request's state for the handler (``FORM``); any other body takes
    Connexion's parse and the contract's rules. ``fast = False`` (``WithoutFastForms``): every body takes
    Connexion's way (tests/api/test_form_parsers.py compares the two). Hooks: ``_schema``, ``_required``,
    ``_strict_validation``, the attributes Connexion's base class keeps its arguments in (stable since 3.0).
    Nothing upstream to remove: ``validator_map`` is the documented way."""

    fast = True

    async def wrap_receive(self, receive: Receive, *, scope: Scope) -> tuple[Receive, Scope]:
        length = Headers(scope=scope).get("content-length", "0").strip()
        if self._required and length.isdigit() and int(length) == 0:
            raise missing_body(self._schema)
        wrapped: tuple[Receive, Scope] = await super().wrap_receive(receive, scope=scope)
        return wrapped

    async def _parse(self, stream: AsyncIterator[bytes], scope: Scope) -> Any:
        rules = _form_rules(self._schema, self._strict_validation) if self.fast else None
        if rules is None or Headers(scope=scope).getlist("content-type") != [_FORM]:
            return await super()._parse(stream, scope)
        body = b"".join([chunk async for chunk in stream])
        pairs = rules.pairs(body)
        if pairs is None:
            return await super()._parse(_once(body), scope)
        FORM.put(scope, pairs)
        return _PROVEN

    def _validate(self, body: Any) -> None:
        if body is _PROVEN:
            return
        if not isinstance(body, dict):
            raise invalid_parameters([("body", "must be a form of named fields")])
        errors = body_errors(self._schema, body, strict=self._strict_validation)
        if errors:
            raise invalid_parameters(errors)


class ContractJson(JSONRequestBodyValidator):  # type: ignore[misc]  # connexion ships without type hints
    """Connexion's JSON body validator with the contract's rules and words (``service.web.validation.body_errors``),
    as ``ContractForm`` for forms: a body that is not JSON, or not an object, is named ``body``; every refused field
    is named with its rule; an unknown field is refused by name; no value and no validator text is repeated
    (Connexion answers with jsonschema's message, which quotes the value). Connexion reads and parses the body
    (``_parse``) and calls ``_validate``, the methods its ``AbstractRequestBodyValidator`` documents for subclasses;
    hooks: ``_schema``, ``_required``, ``_encoding`` (stable since 3.0). Nothing upstream to remove:
    ``validator_map`` is the documented way."""

    async def wrap_receive(self, receive: Receive, *, scope: Scope) -> tuple[Receive, Scope]:
        length = Headers(scope=scope).get("content-length", "0").strip()
        if self._required and length.isdigit() and int(length) == 0:
            raise missing_json(self._schema)
        wrapped: tuple[Receive, Scope] = await super().wrap_receive(receive, scope=scope)
        return wrapped

    async def _parse(self, stream: AsyncIterator[bytes], scope: Scope) -> Any:
        body = b"".join([chunk async for chunk in stream])
        if not body:
            return None
        try:
            return json.loads(body.decode(self._encoding or "utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise invalid_parameters([("body", "must be a JSON object (application/json)")]) from None

    def _validate(self, body: Any) -> None:
        if body is None and self._required:
            raise missing_json(self._schema)
        if not isinstance(body, dict):
            raise invalid_parameters([("body", "must be a JSON object (application/json)")])
        errors = body_errors(self._schema, body, strict=True, what="body")
        if errors:
            raise invalid_parameters(errors)


class WithoutFastForms(ContractForm):
    """``ContractForm`` that leaves every body to Connexion's parser (the reference of the differential test)."""

    fast = False


_FORM = "application/x-www-form-urlencoded"
_PROVEN = object()  # the body ``FormRules`` proved valid: its pairs are in the request's state
_RULES: dict[tuple[int, bool], tuple[Mapping[str, Any], FormRules | None]] = {}  # keeps each schema, so its id


def _form_rules(schema: Mapping[str, Any], strict: bool) -> FormRules | None:
    """The rules of one operation's form schema, worked out at its first request (Connexion makes a validator
    for every request, from the same schema object)."""
    kept = _RULES.get((id(schema), strict))
    if kept is None:
        kept = _RULES[(id(schema), strict)] = (schema, FormRules.of(schema, strict=strict))
    return kept[1]


async def _once(body: bytes) -> AsyncIterator[bytes]:
    yield body


_BODY_VALIDATORS = MediaTypeDict({**VALIDATOR_MAP["body"], _FORM: ContractForm, "*/*json": ContractJson})
_REFERENCE_BODY_VALIDATORS = MediaTypeDict({**VALIDATOR_MAP["body"], _FORM: WithoutFastForms, "*/*json": ContractJson})


class _OnceDecorator(StarletteDecorator):  # type: ignore[misc]  # connexion ships without type hints
    """``StarletteDecorator`` that decorates at once and builds the operation's URI parser on first use.

    A handler that takes no arguments skips the parameter decorator, which would parse the query and the body
    only to pass none of it: such handlers read what they need from the request state.

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
        bare = self._sync_async_decorator(function)
        respond = self._response_decorator_cls(framework=self.framework, jsonifier=self.jsonifier)
        bare_decorated: Callable[..., Any] = respond(lambda _: bare())
        return bare_decorated

    def __call__(self, function: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
        decorated = self.decorate(function)
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
