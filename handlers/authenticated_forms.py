"""What the token, introspection and revocation handlers share: the raw form (repeats included) and the
``Authorization`` and ``Origin`` headers go to the domain's method, run off the event loop."""

from collections.abc import Callable, Sequence
from typing import TypeVar

from service.identity_api.handler_support import current, off_the_loop
from service.web.request_reading import form_pairs

T = TypeVar("T")


async def answer_form(method: Callable[[Sequence[tuple[str, str]], str | None, str | None], T]) -> T:
    """The domain's answer to the form of the request being served."""
    request = current()
    return await off_the_loop(
        method, await form_pairs(request), request.headers.get("Authorization"), request.headers.get("Origin")
    )
