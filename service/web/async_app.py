"""Connexion's AsyncApp, with each operation's handler decorated once instead of on every request.

Connexion 3.3 wraps a handler in its parameter and response decorators inside the request: every
call builds the decorators again, inspects the handler's signature and makes a new URI parser for
the operation. None of that depends on the request, so here it is done on an operation's first
request and kept: the handler gets exactly the arguments, and answers exactly as, Connexion's own
operation would give it (a handler that takes none is called without parsing anything for it).
Measured on the menus API's unique queries, the per-request decoration was about a sixth of the
service's time, and the second parse of the query another sixth.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import connexion
from connexion.apps.asynchronous import AsyncApi, AsyncOperation
from connexion.context import receive, scope
from connexion.decorators import StarletteDecorator
from connexion.operations import AbstractOperation
from connexion.uri_parsing import AbstractURIParser
from starlette.responses import Response as StarletteResponse
from starlette.types import Receive, Scope, Send


class _OnceDecorator(StarletteDecorator):  # type: ignore[misc]  # these connexion modules have no type hints
    """``StarletteDecorator`` that decorates at once and builds the operation's URI parser on first use.

    A handler that takes no arguments skips the parameter decorator, which would parse the query and the body
    only to pass none of it: such handlers read what they need from the request themselves.
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


class _OnceOperation(AsyncOperation):  # type: ignore[misc]
    @functools.cached_property
    def fn(self) -> Callable[..., Awaitable[StarletteResponse]]:
        return _OnceDecorator(pythonic_params=self.pythonic_params, jsonifier=self.jsonifier)(self._fn)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.fn()
        await response(scope, receive, send)


class _OnceApi(AsyncApi):  # type: ignore[misc]
    def make_operation(self, operation: AbstractOperation) -> AsyncOperation:
        return _OnceOperation.from_operation(operation, pythonic_params=self.pythonic_params, jsonifier=self.jsonifier)


class AsyncApp(connexion.AsyncApp):  # type: ignore[misc]
    """``connexion.AsyncApp`` whose operations decorate their handlers once."""

    def __init__(self, import_name: str, **kwargs: Any) -> None:
        super().__init__(import_name, **kwargs)
        self._middleware_app.api_cls = _OnceApi  # read when each API is added, on the first request
