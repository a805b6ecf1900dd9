"""``python -m bench --only startup``'s stack alone (``bench/stack_alone.py``) answers the path the start-up figure
waits for, as stock Connexion (no timing asserted)."""

from __future__ import annotations

from starlette.testclient import TestClient

from bench import stack_alone


def test_the_stack_alone_answers_its_one_operation_with_an_empty_key_set() -> None:
    with TestClient(stack_alone.app()) as client:
        answer = client.get("/jwks")
    assert answer.status_code == 200 and answer.json() == {"keys": []}


def test_the_stack_alone_is_stock_connexion_answering_404_elsewhere() -> None:
    with TestClient(stack_alone.app()) as client:
        assert client.get("/v1/menus/dishes").status_code == 404
