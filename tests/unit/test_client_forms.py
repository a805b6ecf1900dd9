"""The token and introspection endpoints' direct path (service/identity_api/client_forms.py) and the client
endpoints' worker threads (service/identity_api/client_threads.py), without the app.

The direct path answers only the forms the contract accepts as they are; every other form is left to Connexion,
which answers it in the contract's words (the API tests of each endpoint check those answers)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Iterator

import pytest
from starlette.responses import Response

from service.identity_api.client_forms import FormRules, ResponseCheck
from service.identity_api.client_threads import ClientThreads
from service.web.contracts import contract

GOOD = b"grant_type=client_credentials&scope=members%3Aread"


@pytest.fixture(scope="module")
def token_form() -> FormRules:
    return FormRules.of(contract("identity.yaml"), "/oauth2/token")


def test_a_plain_form_within_the_contracts_bounds_is_read_as_starlette_reads_it(token_form: FormRules) -> None:
    assert token_form.pairs(GOOD) == [("grant_type", "client_credentials"), ("scope", "members:read")]
    assert token_form.pairs(b"grant_type=a+b&x=%E2%82%AC") == [("grant_type", "a b"), ("x", "€")]


@pytest.mark.parametrize(
    "body",
    [
        GOOD + b"&grant_type=client_credentials",  # repeated: the domain's invalid_request, by Connexion's way
        b"scope=members%3Aread",  # the required grant_type is missing
        b"grant_type=" + b"a" * 2049,  # over the contract's maxLength
        GOOD + b"&x=%00",  # a control character
        GOOD + b"&client_id=caf%C3%A9",  # a declared field outside its pattern (RFC 6749 Appendix A: VSCHAR)
        b"grant_type=client_credentials&scope=members%22read",  # a scope outside NQCHAR
        GOOD + b"&",  # an empty pair
        GOOD + b"&flag",  # a name without a value
        GOOD + b"&=x",  # a value without a name
        GOOD + b"&a=b=c",  # an unescaped "="
    ],
)
def test_any_other_form_is_left_to_connexion(token_form: FormRules, body: bytes) -> None:
    assert token_form.pairs(body) is None


def test_introspection_refuses_an_empty_token_as_its_contract_does() -> None:
    rules = FormRules.of(contract("identity.yaml"), "/oauth2/introspect")
    assert rules.pairs(b"token=") is None and rules.pairs(b"token=x") == [("token", "x")]


def test_answers_are_checked_against_the_contract_where_responses_are_validated() -> None:
    check = ResponseCheck(contract("identity.yaml"), ["/oauth2/introspect"])
    check.check("/oauth2/introspect", Response(b'{"active": false}', media_type="application/json"))
    with pytest.raises(ValueError, match="declares no JSON answer 418"):
        check.check("/oauth2/introspect", Response(b"{}", status_code=418))
    with pytest.raises(Exception, match="is not of type 'boolean'"):
        check.check("/oauth2/introspect", Response(b'{"active": "yes"}'))


REQUEST = contextvars.ContextVar[str]("request")


def test_client_threads_run_each_call_off_the_loop_in_its_requests_context() -> None:
    threads = ClientThreads(2)
    loop_thread = threading.current_thread()

    def work(n: int) -> tuple[int, str, bool]:
        if n == 7:
            raise LookupError("seven")
        return n * n, REQUEST.get(), threading.current_thread() is not loop_thread

    async def request(n: int) -> tuple[int, str, bool]:
        REQUEST.set(f"request-{n}")
        return await threads.run(work, n)

    async def main() -> list[object]:
        return await asyncio.gather(*(request(n) for n in range(20)), return_exceptions=True)

    answers = asyncio.run(main())
    assert answers[:7] == [(n * n, f"request-{n}", True) for n in range(7)]
    assert isinstance(answers[7], LookupError) and str(answers[7]) == "seven"
    assert answers[8:] == [(n * n, f"request-{n}", True) for n in range(8, 20)]
    assert threads.size == 2


def _queued_behind_a_busy_thread(read: object, items: int) -> tuple[list[object], list[str]]:
    """Calls queued while the only thread is busy, each naming ``read`` with its item; their answers, and what
    happened in order."""
    threads = ClientThreads(1)
    busy, happened = threading.Event(), []

    def first() -> str:
        busy.wait(5)
        return "first"

    def call(item: str) -> str:
        happened.append(f"call {item}")
        return item.upper()

    async def main() -> list[object]:
        blocker = asyncio.ensure_future(threads.run(first))
        await asyncio.sleep(0)
        queued = [asyncio.ensure_future(threads.run(call, f"t{n}", together=(read, f"t{n}"))) for n in range(items)]
        await asyncio.sleep(0)  # every call is in the queue now
        busy.set()
        return await asyncio.gather(blocker, *queued, return_exceptions=True)

    return asyncio.run(main()), happened


def test_calls_queued_together_read_together_once_before_they_run() -> None:
    happened: list[str] = []

    @contextlib.contextmanager
    def read(items: list[str]) -> Iterator[None]:
        happened.append("read " + " ".join(items))
        yield
        happened.append("done")

    answers, calls = _queued_behind_a_busy_thread(read, 3)
    assert answers == ["first", "T0", "T1", "T2"]
    assert happened == ["read t0 t1 t2", "done"]
    assert calls == ["call t0", "call t1", "call t2"]


def test_a_failed_read_together_leaves_each_call_to_read_on_its_own() -> None:
    def read(items: list[str]) -> contextlib.AbstractContextManager[None]:
        raise OSError("the database is away")

    answers, calls = _queued_behind_a_busy_thread(read, 2)
    assert answers == ["first", "T0", "T1"]
    assert calls == ["call t0", "call t1"]
