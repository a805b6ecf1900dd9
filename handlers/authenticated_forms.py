"""What the token, introspection and revocation handlers share: the raw form (repeats included) and the
``Authorization`` and ``Origin`` headers go to the domain's method, run off the event loop on the client workers."""

from collections.abc import Callable, Sequence
from typing import TypeVar

from service.identity_api.handler_support import current, off_the_loop
from service.web.offload import Together, WritesTogether
from service.web.request_reading import form_pairs

T = TypeVar("T")
Pairs = Sequence[tuple[str, str]]


async def answer_form(
    method: Callable[[Pairs, str | None, str | None], T],
    *,
    together: Callable[[Pairs], Together | None] = lambda _: None,
    writes: Callable[[Pairs], WritesTogether | None] = lambda _: None,
) -> T:
    """The domain's answer to the form of the request being served; ``together``, ``writes``: what the call reads
    or writes with the others a worker runs in a row, by the form (service/web/offload.py)."""
    request = current()
    pairs = await form_pairs(request)
    return await off_the_loop(
        method,
        pairs,
        request.headers.get("Authorization"),
        request.headers.get("Origin"),
        together=together(pairs),
        writes=writes(pairs),
    )
