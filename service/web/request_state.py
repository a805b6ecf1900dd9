"""What the edges hand the handlers through a request's ``scope["state"]``, one typed slot per thing.

Connexion calls a handler with the parameters it validated and nothing else, so each API's entry
(or the gate, or the parameter validation) puts what the handlers need in the request's state, and
the handlers take it from there: ``CATALOG.put(scope, catalog)`` on the way in, ``CATALOG.get(scope)``
in the handler, typed at both ends. The slots below are every key the service uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from starlette.types import Scope

if TYPE_CHECKING:
    from data.catalog import Catalog
    from identity.provider import Provider
    from service.console_api.console_web import ConsoleWeb
    from service.identity_api.client_threads import ClientThreads
    from service.identity_api.responses import BodyRecorder
    from service.ops.health import Readiness

T = TypeVar("T")


class Slot(Generic[T]):
    """One named entry of ``scope["state"]`` holding a ``T``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def put(self, scope: Scope, value: T) -> None:
        scope.setdefault("state", {})[self.name] = value

    def get(self, scope: Scope) -> T:
        """The value put for this request; KeyError when nobody put one (a wiring error, never a client's)."""
        return cast(T, scope["state"][self.name])


CATALOG: Slot[Catalog] = Slot("catalog")  # the menus gate: the dish catalog the menus handlers read
# The menus gate: the menus API's URL from the settings (MENUS_BASE_URL + "/v1"), never from the Host header.
API_URL: Slot[str] = Slot("api_url")
# The menus and operations parameter validation: the validated, typed arguments with the contract's defaults.
ARGUMENTS: Slot[dict[str, Any]] = Slot("arguments")
PROVIDER: Slot[Provider] = Slot("provider")  # the identity API's entry: the OpenID provider
CLIENT_THREADS: Slot[ClientThreads] = Slot("client_threads")  # the identity API: worker threads it may use
BODY: Slot[BodyRecorder] = Slot("body")  # the identity and console entries: a POST's body, as validation read it
CONSOLE: Slot[ConsoleWeb] = Slot("console")  # the console's entry: its web side
READINESS: Slot[Readiness] = Slot("readiness")  # the operations app: the readiness check of /readyz
