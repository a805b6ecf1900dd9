"""What the token, introspection and revocation handlers share: the raw form (repeats included) and the
``Authorization`` and ``Origin`` headers go to the domain's method, run off the event loop on the client workers."""

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from service.identity_api.handler_support import current, off_the_loop
from service.web.offload import Units
from service.web.request_reading import first_headers, form_pairs

T = TypeVar("T")
Pairs = Sequence[tuple[str, str]]


async def answer_form(method: Callable[..., T], *, units: Units | None = None, hint: Callable[[Pairs], Any] = len) -> T:
    """The domain's answer to the form of the request being served; with ``units``, the method takes its unit of
    work last, opened with ``hint(pairs)`` among the calls a worker runs in a row (service/web/offload.py)."""
    request = current()
    pairs = await form_pairs(request)
    authorization, origin = first_headers(request.scope, (b"authorization", b"origin"))
    if units is None:
        return await off_the_loop(method, pairs, authorization, origin)
    return await off_the_loop(method, pairs, authorization, origin, units=units, hint=hint(pairs))
