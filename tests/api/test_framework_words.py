"""No validator or framework wording reaches a client, on any of the four documents: Schemathesis fuzzes each
operation in process (bounded: ``EXAMPLES`` cases an operation, positive and negative), and every answer's
body and headers are searched for jsonschema's, Connexion's, Starlette's and Werkzeug's phrasing
(``tests/support/framework_words.py``)."""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.config import SchemathesisConfig

from tests.support.framework_words import framework_words

EXAMPLES = 30  # generated cases an operation: enough to meet every kind of refusal, bounded for the suite
DOCUMENTS = {
    "menus": "/v1/openapi.json",
    "identity": "/openapi.json",
    "operations": "/ops/openapi.json",
    "console": "/console/openapi.json",
}


def fuzz(app: Any, document: str, **call: Any) -> int:
    """Every operation of ``document``, ``EXAMPLES`` positive and ``EXAMPLES`` negative cases each: the number of
    answers searched. Driven by hand: Schemathesis' pytest loader (``from_fixture``) needs pytest < 9."""
    config = SchemathesisConfig()  # not the project's schemathesis.toml, which reads a live run's credentials
    schema = schemathesis.openapi.from_asgi(DOCUMENTS[document], app, config=config)
    searched: list[int] = []
    for result in schema.get_all_operations():
        for mode in GenerationMode:
            try:
                search(result.ok().as_strategy(generation_mode=mode), mode, searched, call)
            except Unsatisfiable:  # no negative case exists for an operation that takes nothing
                assert mode is GenerationMode.NEGATIVE
    return len(searched)


def search(cases: Any, mode: GenerationMode, searched: list[int], call: dict[str, Any]) -> None:
    @given(case=cases)
    @FUZZ
    def answer_in_our_words(case: Any) -> None:
        response = case.call(**call)
        searched.append(response.status_code)
        headers = " ".join(f"{name}: {value}" for name, value in response.headers.items())
        text = response.content.decode("utf-8", errors="replace")  # the site's icon is an image
        said = framework_words(text) or framework_words(headers)
        where = f"{case.method} {case.formatted_path} ({mode.value})"
        assert said is None, f"{where}: {response.status_code} says {said!r}: {text[:1500]}"

    answer_in_our_words()


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def test_the_menus_api_answers_in_its_own_words(app: Any, api_key: str) -> None:
    assert fuzz(app, "menus", headers={"Authorization": f"Bearer {api_key}"}) >= 5 * EXAMPLES


def test_the_identity_api_answers_in_its_own_words(app: Any) -> None:
    assert fuzz(app, "identity") >= 10 * EXAMPLES


def test_the_operations_api_answers_in_its_own_words(app: Any) -> None:
    assert fuzz(app, "operations") >= 4  # four operations, none takes a parameter: one case each


def test_the_console_answers_in_its_own_words(app: Any) -> None:
    assert fuzz(app, "console") >= 4 * EXAMPLES
