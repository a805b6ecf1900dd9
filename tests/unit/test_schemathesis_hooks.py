"""The project's Schemathesis hooks (tests/support/schemathesis_hooks.py), loaded by every live run of the
project's own (``SCHEMATHESIS_HOOKS``): the check that no answer speaks a framework's words is registered, so that
``--checks all`` runs it on every case, and it tells a framework's words from the service's own."""

from __future__ import annotations

import pytest
import requests
from schemathesis.checks import CHECKS
from schemathesis.core.transport import Response

from tests.support import schemathesis_hooks


class _Operation:
    label = "GET /v1/menus/dishes"


class _Case:
    operation = _Operation()


def answer(body: str, **headers: str) -> Response:
    request = requests.Request("GET", "http://127.0.0.1/v1/menus/dishes").prepare()
    return Response(
        status_code=400,
        headers={name: [value] for name, value in {"content-type": "application/problem+json", **headers}.items()},
        content=body.encode(),
        request=request,
        elapsed=0.01,
        verify=True,
    )


def test_every_live_run_checks_each_answer_for_framework_words() -> None:
    assert "answers_in_our_own_words" in CHECKS.get_all_names()


def test_an_answer_in_the_services_own_words_passes() -> None:
    own = '{"code": "invalid_parameter", "detail": "limit must be an integer from 1 to 100"}'
    schemathesis_hooks.answers_in_our_own_words(None, answer(own), _Case())


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        ("{\"detail\": \"'abc' is not of type 'integer'\"}", {}),
        ('{"detail": "Extra query parameter(s) x not in spec"}', {}),
        ("Traceback (most recent call last):\n  File ...", {}),
        ("{}", {"server": "starlette"}),
    ],
)
def test_a_validators_or_frameworks_words_in_the_body_or_a_header_fail_the_run(
    body: str, headers: dict[str, str]
) -> None:
    with pytest.raises(AssertionError, match="framework's words"):
        schemathesis_hooks.answers_in_our_own_words(None, answer(body, **headers), _Case())
