"""The member directory: the members of the client's organization, paginated with a signed cursor, for
application tokens with ``members:read`` only.

How every test here runs (the app in process, both databases): ``tests/support/token_flows.py``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.users import User, UserStore
from identity.common.clock import SYSTEM_CLOCK
from service.settings import Settings
from tests.support import token_flows as flows
from tests.support.clocks import FixedClock
from tests.support.identity_fixtures import PASSWORD
from tests.support.passwords import FAST_HASHING

ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


@pytest.fixture
def crew(engine: Engine, world: flows.World) -> list[User]:
    """Four more members of Acme, five in all with Ana."""
    users = UserStore(engine, hashing=FAST_HASHING)
    return [world.ana] + [
        users.create(f"member{n}@example.com", f"Member {n}", PASSWORD, [(world.acme.id, role)])
        for n, role in enumerate(("admin", "member", "member", "owner"), start=1)
    ]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def members_token(http: TestClient, registered: flows.Registered) -> str:
    response = flows.application_token(http, registered, scope="members:read")
    assert response.status_code == 200, response.text
    return response.json()["access_token"]  # type: ignore[no-any-return]


def test_directory_lists_the_members_of_the_clients_organization(
    http: TestClient, world: flows.World, crew: list[User]
) -> None:
    response = http.get("/directory/members", headers=bearer(members_token(http, world.reporter)))

    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    page = response.json()
    assert page["total"] == 5 and page["next_cursor"] is None
    assert {m["id"] for m in page["data"]} == {user.id for user in crew}
    for member in page["data"]:
        assert set(member) == {"id", "email", "name", "role", "joined_at"}
    ana = next(m for m in page["data"] if m["id"] == world.ana.id)
    assert (ana["email"], ana["name"], ana["role"]) == ("ana@example.com", "Ana Lima", "owner")
    order = [(datetime.fromisoformat(m["joined_at"]), m["id"]) for m in page["data"]]
    assert order == sorted(order)


def test_directory_pagination_visits_every_member_once(http: TestClient, world: flows.World, crew: list[User]) -> None:
    headers = bearer(members_token(http, world.reporter))
    seen: list[str] = []
    sizes: list[int] = []
    params: dict[str, Any] = {"limit": 2}
    while True:
        response = http.get("/directory/members", params=params, headers=headers)
        assert response.status_code == 200, response.text
        page = response.json()
        assert page["total"] == 5
        seen += [m["id"] for m in page["data"]]
        sizes.append(len(page["data"]))
        if page["next_cursor"] is None:
            break
        params = {"limit": 2, "cursor": page["next_cursor"]}

    assert sizes == [2, 2, 1]
    assert sorted(seen) == sorted(user.id for user in crew)
    full = http.get("/directory/members", headers=headers).json()
    assert seen == [m["id"] for m in full["data"]]


def test_a_directory_page_with_more_links_to_the_next_from_the_issuer_not_the_host_header(
    http: TestClient, world: flows.World, crew: list[User], settings: Settings
) -> None:
    """RFC 8288 §3: ``Link: <URI-Reference>; rel="next"``; the URL comes from MENUS_ISSUER, whatever ``Host`` says."""
    headers = {**bearer(members_token(http, world.reporter)), "Host": "attacker.example"}
    first = http.get("/directory/members", params={"limit": 2}, headers=headers)
    cursor = first.json()["next_cursor"]
    link = f"{settings.issuer}/directory/members?limit=2&cursor={cursor}"
    assert first.headers["link"] == f'<{link}>; rel="next"'
    followed = http.get(link.removeprefix(settings.issuer), headers=headers)
    assert followed.status_code == 200, followed.text
    assert (
        followed.json() == http.get("/directory/members", params={"limit": 2, "cursor": cursor}, headers=headers).json()
    )
    last = http.get("/directory/members", params={"limit": 5}, headers=headers)
    assert last.json()["next_cursor"] is None and "link" not in last.headers


def test_directory_pagination_breaks_joined_at_ties_by_id(http: TestClient, engine: Engine, world: flows.World) -> None:
    moment = SYSTEM_CLOCK.now().replace(microsecond=0) + timedelta(seconds=1)  # after Ana joined
    users = UserStore(engine, FixedClock(moment), hashing=FAST_HASHING)  # four members join at the same instant
    twins = [users.create(f"twin{n}@example.com", f"Twin {n}", PASSWORD, [(world.acme.id, "member")]) for n in range(4)]
    headers = bearer(members_token(http, world.reporter))
    seen: list[str] = []
    params: dict[str, Any] = {"limit": 2}
    for _ in range(5):
        page = http.get("/directory/members", params=params, headers=headers).json()
        seen += [m["id"] for m in page["data"]]
        if page["next_cursor"] is None:
            break
        params = {"limit": 2, "cursor": page["next_cursor"]}

    assert seen == [world.ana.id, *sorted(user.id for user in twins)]


def tampered(cursor: str) -> str:
    middle = len(cursor) // 2
    return cursor[:middle] + ("A" if cursor[middle] != "A" else "B") + cursor[middle + 1 :]


def test_directory_refuses_an_altered_cursor(http: TestClient, world: flows.World, crew: list[User]) -> None:
    headers = bearer(members_token(http, world.reporter))
    cursor = http.get("/directory/members", params={"limit": 2}, headers=headers).json()["next_cursor"]

    for bad in (tampered(cursor), cursor + "x", "not-a-cursor"):
        response = http.get("/directory/members", params={"limit": 2, "cursor": bad}, headers=headers)
        assert response.status_code == 400, (bad, response.text)
        assert response.json()["error"] == "invalid_request"


def test_directory_refuses_a_cursor_of_another_organization(
    http: TestClient, world: flows.World, crew: list[User]
) -> None:
    acme = bearer(members_token(http, world.reporter))
    cursor = http.get("/directory/members", params={"limit": 2}, headers=acme).json()["next_cursor"]

    response = http.get(
        "/directory/members", params={"limit": 2, "cursor": cursor}, headers=bearer(members_token(http, world.rival))
    )

    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_request"


@pytest.mark.parametrize("limit", [0, 101, -1])
def test_directory_refuses_a_limit_out_of_range(http: TestClient, world: flows.World, limit: int) -> None:
    response = http.get(
        "/directory/members", params={"limit": limit}, headers=bearer(members_token(http, world.reporter))
    )

    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_request"


def test_directory_without_a_token_is_invalid_token_without_error_attribute(http: TestClient) -> None:
    response = http.get("/directory/members")

    assert response.status_code == 401, response.text
    assert response.json()["error"] == "invalid_token"
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert "error=" not in challenge


def test_directory_with_a_bad_token_is_invalid_token(
    http: TestClient, world: flows.World, stranger_key: flows.KeyPair
) -> None:
    genuine = members_token(http, world.reporter)
    forged = flows.look_alike(genuine, stranger_key)

    for token in ("not.a.jwt", forged):
        response = http.get("/directory/members", headers=bearer(token))
        assert response.status_code == 401, response.text
        assert response.json()["error"] == "invalid_token"
        assert 'error="invalid_token"' in response.headers["www-authenticate"]


def test_directory_refuses_a_revoked_application_token(http: TestClient, world: flows.World) -> None:
    token = members_token(http, world.reporter)
    assert flows.revoke(http, world.reporter, token).status_code == 200

    response = http.get("/directory/members", headers=bearer(token))

    assert response.status_code == 401, response.text
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


def test_directory_refuses_a_user_access_token_with_insufficient_scope(http: TestClient, world: flows.World) -> None:
    tokens = flows.user_tokens(http, world.planner)

    response = http.get("/directory/members", headers=bearer(tokens["access_token"]))

    assert response.status_code == 403, response.text
    assert response.json()["error"] == "insufficient_scope"
    challenge = response.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="members:read"' in challenge


def test_a_sign_in_cannot_obtain_members_read(http: TestClient, world: flows.World) -> None:
    tokens = flows.user_tokens(
        http, world.rival, scope="openid members:read"
    )  # rival may use members:read, but not here

    assert "members:read" not in tokens["scope"].split()
    response = http.get("/directory/members", headers=bearer(tokens["access_token"]))
    assert response.status_code == 403, response.text
    assert response.json()["error"] == "insufficient_scope"


def test_directory_of_another_organization_lists_only_its_own_members(
    http: TestClient, engine: Engine, world: flows.World
) -> None:
    users = UserStore(engine, hashing=FAST_HASHING)
    bo = users.create("bo@example.com", "Bo Berg", PASSWORD, [(world.beta.id, "owner")])
    cara = users.create(
        "cara@example.com", "Cara Diaz", PASSWORD, [(world.acme.id, "member"), (world.beta.id, "admin")]
    )

    beta = http.get("/directory/members", headers=bearer(members_token(http, world.rival))).json()
    acme = http.get("/directory/members", headers=bearer(members_token(http, world.reporter))).json()

    assert [m["id"] for m in beta["data"]] == [bo.id, cara.id] and beta["total"] == 2
    assert {m["id"]: m["role"] for m in beta["data"]} == {bo.id: "owner", cara.id: "admin"}
    assert {m["id"] for m in acme["data"]} == {world.ana.id, cara.id} and acme["total"] == 2
