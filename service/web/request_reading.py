"""What the handlers of the identity API and of the console read from a request: the body as it was sent,
the form and query pairs, and the browser's cookies of ours.

The entry of each app puts a ``BodyRecorder`` in the request's state (the slot ``BODY``) before Connexion's
validation reads the body, so that the handlers can parse it again with every pair as sent.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.types import Message, Receive, Scope

from identity.accounts.device_cookies import DEVICE_COOKIE
from identity.common.text import has_control
from identity.interaction.browser import INTERACTION_COOKIE_PREFIX, SESSION_COOKIE, Browser
from service.web.request_state import FORM, Slot


class BodyRecorder:
    """The request's ``receive``, keeping the body as its first reader (Connexion's validation) reads it.

    Downstream of validation a body is a one-time replay, and Connexion's own parse keeps only joined values;
    the handlers need every pair as sent (a repeated parameter is an error), so they parse the kept body.
    """

    def __init__(self, receive: Receive) -> None:
        self.receive = receive
        self.chunks: list[bytes] = []
        self.complete = False

    async def __call__(self) -> Message:
        message = await self.receive()
        if message["type"] == "http.request":
            self.chunks.append(message.get("body", b""))
            self.complete = not message.get("more_body", False)
        return message

    async def body(self) -> bytes:
        while not self.complete:  # nobody has read it all yet
            if (await self())["type"] == "http.disconnect":
                raise ClientDisconnect()
        return b"".join(self.chunks)


async def form_pairs(request: Request) -> list[tuple[str, str]]:
    """Every name/value pair of the form, repeated names included, parsed as Connexion's validation parsed it
    (or as the contract's form rules read it, ``FORM``: service/web/fast_forms.py)."""
    read = FORM.find(request.scope)
    if read is not None:
        return read
    body = await BODY.get(request.scope).body()

    async def replay() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    form = await Request(request.scope, replay).form()
    return without_controls([(name, value) for name, value in form.multi_items() if isinstance(value, str)])


def first_headers(scope: Scope, names: tuple[bytes, ...]) -> list[str | None]:
    """The first value of each header of ``names`` (lower case), None where the request has none: what
    ``request.headers.get(name)`` gives for each, in one pass over the headers instead of one each."""
    found: dict[bytes, str] = {}
    for key, value in scope["headers"]:
        if key in names and key not in found:
            found[key] = value.decode("latin-1")
    return [found.get(name) for name in names]


def query_pairs(request: Request) -> list[tuple[str, str]]:
    return without_controls(list(request.query_params.multi_items()))


def without_controls(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``pairs``, refused (400, in the endpoint's error form) when a name or value holds a control character:
    no parameter of ours may (RFC 6749 Appendix A: client_id, state, code… are visible ASCII), and a NUL byte
    would reach the database (identity/common/text.py). The refusal names neither the parameter's value nor its name."""
    if any(has_control(name) or has_control(value) for name, value in pairs):
        raise HTTPException(400, "A parameter contains a control character.")
    return pairs


def browser(request: Request) -> Browser:
    """The browser's cookies of ours; one holding a control character (a quoted cookie may: ``"\\000"``) is
    treated as absent, as any other cookie we did not set."""
    cookies = {name: value for name, value in request.cookies.items() if not has_control(value)}
    return Browser(
        bindings={k: v for k, v in cookies.items() if k.startswith(INTERACTION_COOKIE_PREFIX)},
        session=cookies.get(SESSION_COOKIE),
        address=request.client.host if request.client else "unknown",
        device=cookies.get(DEVICE_COOKIE),
    )


BODY: Slot[BodyRecorder] = Slot("body")  # the identity and console entries: a POST's body, as validation read it
