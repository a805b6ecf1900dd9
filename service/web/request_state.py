"""What the edges hand the handlers through a request's ``scope["state"]``, one typed slot per thing.

Connexion calls a handler with the parameters it validated and nothing else, so each API's entry
(or the gate, or the parameter validation) puts what the handlers need in the request's state, and
the handlers take it from there: ``CATALOG.put(scope, catalog)`` on the way in, ``CATALOG.get(scope)``
in the handler, typed at both ends. Each package declares the slots it fills beside the code that fills
them (the menus gate's ``CATALOG``, the console's ``CONSOLE``, the identity API's ``PROVIDER``...); the
slots here are the shared layer's own: the validated arguments, a form's pairs, and the request body's reader
(``request_reading.py``).
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, cast

from starlette.types import Scope

T = TypeVar("T")


class Slot(Generic[T]):
    """One named entry of ``scope["state"]`` holding a ``T``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def put(self, scope: Scope, value: T) -> None:
        scope.setdefault("state", {})[self.name] = value

    def find(self, scope: Scope) -> T | None:
        """The value put for this request, or None if nobody put one."""
        return cast("T | None", scope.get("state", {}).get(self.name))

    def get(self, scope: Scope) -> T:
        """The value put for this request; KeyError when nobody put one (a wiring error, never a client's)."""
        return cast(T, scope["state"][self.name])


# The menus and operations parameter validation: the validated, typed arguments with the contract's defaults.
ARGUMENTS: Slot[dict[str, Any]] = Slot("arguments")
# The form validation: a plain form's pairs as read, where the contract's rules proved it valid (fast_forms.py).
FORM: Slot[list[tuple[str, str]]] = Slot("form")
