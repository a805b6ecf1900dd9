"""The management API (openapi/management.yaml) through the ASGI app: tokens of the organization's own clients
with management scopes, members and roles, invitations, clients and their secrets, API keys and the audit trail;
the house rules (problem details, ETag and If-Match, cursor pages with Link, Idempotency-Key on creates)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization, OrganizationStore
from identity.accounts.users import User, UserStore
from identity.common.tables import clients, memberships
from identity.organizations.tables import invitations
from service.settings import Settings
from tests.support import token_flows as flows
from tests.support.clocks import MovableClock
from tests.support.identity_fixtures import PASSWORD
from tests.support.passwords import FAST_HASHING

API = "/management/v1"
ALL = ("manage:members", "manage:clients", "manage:keys", "manage:audit")
PROBLEM = "application/problem+json"


@pytest.fixture
def http(app: Any) -> Iterator[TestClient]:
    with TestClient(app, base_url="http://127.0.0.1:8000", follow_redirects=False) as client:
        yield client


@pytest.fixture
def grove(engine: Engine) -> Organization:
    return OrganizationStore(engine).create("Olive Grove")


@pytest.fixture
def people(engine: Engine, grove: Organization) -> dict[str, User]:
    users = UserStore(engine, hashing=FAST_HASHING)
    return {
        role: users.create(f"{role}@grove.example", role.title(), PASSWORD, [(grove.id, role)])
        for role in ("owner", "admin", "member")
    }


def bot(engine: Engine, org: Organization, scopes: tuple[str, ...] = ALL) -> flows.Registered:
    return flows.register(engine, org, "Ops bot", grants=["client_credentials"], scopes=list(scopes), first_party=False)


def bearer(http: TestClient, registered: flows.Registered, scope: str = " ".join(ALL)) -> dict[str, str]:
    answer = flows.application_token(http, registered, scope=scope)
    assert answer.status_code == 200, answer.text
    return {"Authorization": f"Bearer {answer.json()['access_token']}"}


@pytest.fixture
def ops(http: TestClient, engine: Engine, grove: Organization, people: dict[str, User]) -> dict[str, str]:
    return bearer(http, bot(engine, grove))


def change(http: TestClient, url: str, *, json: dict[str, Any], headers: dict[str, str]) -> Any:
    """A PATCH with a JSON body."""
    return http.request("PATCH", url, json=json, headers=headers)


def problem(answer: Any, status: int, code: str) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == PROBLEM, answer.headers
    body: dict[str, Any] = answer.json()
    assert body["code"] == code and body["status"] == status, body
    return body


# The document and authorization


def test_the_document_is_served_with_its_swagger_ui(http: TestClient) -> None:
    document = http.get(f"{API}/openapi.json")
    assert document.status_code == 200
    assert document.json()["servers"][0]["url"] == "http://127.0.0.1:8000/management/v1"
    assert http.get(f"{API}/openapi.yaml").status_code == 200
    assert http.get(f"{API}/ui/").status_code == 200


def test_tokens_are_checked_before_anything_else(
    http: TestClient, engine: Engine, grove: Organization, people: dict[str, User]
) -> None:
    missing = http.get(f"{API}/members")
    problem(missing, 401, "unauthorized")
    assert missing.headers["www-authenticate"] == 'Bearer realm="management"'
    forged = http.get(f"{API}/members", headers={"Authorization": "Bearer not.a.token"})
    problem(forged, 401, "unauthorized")
    assert 'error="invalid_token"' in forged.headers["www-authenticate"]
    narrow = bearer(http, bot(engine, grove, ("manage:audit",)), "manage:audit")
    refused = http.get(f"{API}/members", headers=narrow)
    problem(refused, 403, "forbidden")
    assert 'error="insufficient_scope", scope="manage:members"' in refused.headers["www-authenticate"]
    assert http.get(f"{API}/audit", headers=narrow).status_code == 200


def test_a_token_issued_for_a_user_is_refused(
    http: TestClient, engine: Engine, grove: Organization, people: dict[str, User]
) -> None:
    app = flows.sign_in_client(engine, grove, "Grove Planner")
    tokens = flows.user_tokens(http, app, email="owner@grove.example")
    answer = http.get(f"{API}/members", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    problem(answer, 403, "forbidden")


def test_a_client_without_management_scopes_cannot_ask_for_them(
    http: TestClient, engine: Engine, grove: Organization
) -> None:
    plain = flows.register(engine, grove, "Reporter", grants=["client_credentials"], scopes=["members:read"])
    flows.assert_oauth_error(flows.application_token(http, plain, scope="manage:members"), "invalid_scope")


# Members


def test_members_are_listed_a_page_at_a_time_with_a_link_to_the_next(
    http: TestClient, ops: dict[str, str], people: dict[str, User]
) -> None:
    first = http.get(f"{API}/members", params={"limit": 2}, headers=ops)
    assert first.status_code == 200
    body = first.json()
    assert body["total"] == 3 and len(body["data"]) == 2 and body["next_cursor"]
    assert first.headers["link"].startswith(f"<http://127.0.0.1:8000{API}/members?limit=2&cursor=")
    member = body["data"][0]
    assert set(member) == {"user_id", "email", "name", "role", "joined_at", "last_sign_in_at", "email_verified"}
    rest = http.get(f"{API}/members", params={"limit": 2, "cursor": body["next_cursor"]}, headers=ops).json()
    assert len(rest["data"]) == 1 and rest["next_cursor"] is None
    altered = http.get(f"{API}/members", params={"cursor": body["next_cursor"][:-2] + "AA"}, headers=ops)
    problem(altered, 400, "invalid_cursor")


def test_a_role_change_needs_if_match_and_a_lost_update_is_refused(
    http: TestClient, ops: dict[str, str], people: dict[str, User]
) -> None:
    member = people["member"].id
    read = http.get(f"{API}/members/{member}", headers=ops)
    etag = read.headers["etag"]
    problem(change(http, f"{API}/members/{member}", json={"role": "admin"}, headers=ops), 428, "precondition_required")
    changed = change(http, f"{API}/members/{member}", json={"role": "admin"}, headers={**ops, "If-Match": etag})
    assert changed.status_code == 200 and changed.json()["role"] == "admin"
    assert changed.headers["etag"] != etag
    lost = change(http, f"{API}/members/{member}", json={"role": "member"}, headers={**ops, "If-Match": etag})
    problem(lost, 412, "precondition_failed")


def test_a_token_has_an_admins_powers_and_never_an_owners(
    http: TestClient, ops: dict[str, str], people: dict[str, User]
) -> None:
    member, owner = people["member"].id, people["owner"].id
    etag = http.get(f"{API}/members/{member}", headers=ops).headers["etag"]
    made_owner = change(http, f"{API}/members/{member}", json={"role": "owner"}, headers={**ops, "If-Match": etag})
    problem(made_owner, 403, "forbidden")
    owner_etag = http.get(f"{API}/members/{owner}", headers=ops).headers["etag"]
    demoted = change(http, f"{API}/members/{owner}", json={"role": "member"}, headers={**ops, "If-Match": owner_etag})
    problem(demoted, 403, "forbidden")
    problem(http.delete(f"{API}/members/{owner}", headers=ops), 403, "forbidden")
    problem(
        http.post(f"{API}/invitations", json={"email": "x@example.com", "role": "owner"}, headers=ops), 403, "forbidden"
    )


def test_removing_a_member_revokes_their_tokens_for_the_organization(
    http: TestClient, engine: Engine, grove: Organization, ops: dict[str, str], people: dict[str, User]
) -> None:
    app = flows.sign_in_client(engine, grove, "Grove Planner")
    tokens = flows.user_tokens(http, app, email="member@grove.example")
    assert flows.userinfo_status(http, tokens["access_token"]) == 200
    assert http.delete(f"{API}/members/{people['member'].id}", headers=ops).status_code == 204
    assert flows.userinfo_status(http, tokens["access_token"]) == 401
    problem(http.get(f"{API}/members/{people['member'].id}", headers=ops), 404, "not_found")


def test_a_token_reaches_only_its_own_organization(
    http: TestClient, engine: Engine, ops: dict[str, str], people: dict[str, User]
) -> None:
    other = OrganizationStore(engine).create("Pepper Patch")
    pat = UserStore(engine, hashing=FAST_HASHING).create("pat@pepper.example", "Pat", PASSWORD, [(other.id, "owner")])
    theirs = bot(engine, other)
    problem(http.get(f"{API}/members/{pat.id}", headers=ops), 404, "not_found")
    problem(http.delete(f"{API}/members/{pat.id}", headers=ops), 404, "not_found")
    problem(http.get(f"{API}/clients/{theirs.id}", headers=ops), 404, "not_found")
    problem(http.post(f"{API}/clients/{theirs.id}/secret", headers=ops), 404, "not_found")
    listed = http.get(f"{API}/members", headers=ops).json()
    assert all(member["user_id"] != pat.id for member in listed["data"])


# Invitations and Idempotency-Key


def test_a_retried_invitation_makes_one_invitation_and_answers_the_same(
    http: TestClient, engine: Engine, ops: dict[str, str]
) -> None:
    headers = {**ops, "Idempotency-Key": "invite-tom-1"}
    first = http.post(f"{API}/invitations", json={"email": "tom@example.com"}, headers=headers)
    assert first.status_code == 201 and first.json()["state"] == "pending" and first.json()["role"] == "member"
    assert first.headers["location"] == f"{API}/invitations/{first.json()['id']}"
    again = http.post(f"{API}/invitations", json={"email": "tom@example.com"}, headers=headers)
    assert again.status_code == 201 and again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    other = http.post(f"{API}/invitations", json={"email": "ann@example.com"}, headers=headers)
    problem(other, 422, "idempotency_key_reused")
    with engine.connect() as connection:
        assert connection.scalar(sa.select(sa.func.count()).select_from(invitations)) == 1
    without_key = http.post(f"{API}/invitations", json={"email": "tom@example.com"}, headers=ops)
    problem(without_key, 409, "conflict")  # already invited: send it again instead


def test_invitations_are_listed_sent_again_and_revoked_by_an_action_that_leaves_them_readable(
    http: TestClient, ops: dict[str, str]
) -> None:
    created = http.post(f"{API}/invitations", json={"email": "tom@example.com", "role": "admin"}, headers=ops).json()
    listed = http.get(f"{API}/invitations", headers=ops).json()
    assert [i["id"] for i in listed["data"]] == [created["id"]] and listed["total"] == 1
    resent = http.post(f"{API}/invitations/{created['id']}/resend", headers=ops)
    assert resent.status_code == 200 and resent.json()["sends"] == 2
    revoked = http.post(f"{API}/invitations/{created['id']}/revoke", headers=ops)
    assert revoked.status_code == 200 and revoked.json()["state"] == "revoked"
    assert revoked.json()["id"] == created["id"] and revoked.headers["cache-control"] == "no-store"
    read = http.get(f"{API}/invitations/{created['id']}", headers=ops)
    assert read.status_code == 200 and read.json() == revoked.json()  # a state change: the invitation stays
    problem(http.post(f"{API}/invitations/{created['id']}/revoke", headers=ops), 409, "conflict")
    assert http.get(f"{API}/invitations", headers=ops).json()["total"] == 0
    problem(http.post(f"{API}/invitations/inv_{'0' * 16}/revoke", headers=ops), 404, "not_found")


def test_an_invitation_or_an_api_key_is_never_deleted_so_a_delete_on_it_is_405(
    http: TestClient, ops: dict[str, str]
) -> None:
    invitation = http.post(f"{API}/invitations", json={"email": "ann@example.com"}, headers=ops).json()
    key = http.post(f"{API}/api-keys", json={"name": "nightly"}, headers=ops).json()
    for url in (f"{API}/invitations/{invitation['id']}", f"{API}/api-keys/{key['id']}"):
        refused = http.delete(url, headers=ops)
        problem(refused, 405, "method_not_allowed")
        assert "DELETE" not in refused.headers["allow"] and http.get(url, headers=ops).status_code == 200
    assert http.get(f"{API}/invitations/{invitation['id']}", headers=ops).json()["state"] == "pending"
    assert http.get(f"{API}/api-keys/{key['id']}", headers=ops).json()["state"] == "active"


def test_json_bodies_are_checked_in_the_houses_words(http: TestClient, ops: dict[str, str]) -> None:
    unknown = problem(
        http.post(f"{API}/invitations", json={"email": "a@b.co", "x": 1}, headers=ops), 400, "invalid_parameter"
    )
    assert unknown["invalid_params"][0]["name"] == "x"
    bad_role = problem(
        http.post(f"{API}/invitations", json={"email": "a@b.co", "role": "chef"}, headers=ops), 400, "invalid_parameter"
    )
    assert bad_role["invalid_params"] == [{"name": "role", "reason": "must be one of: owner, admin, member"}]
    not_json = http.post(f"{API}/invitations", content=b"{", headers={**ops, "Content-Type": "application/json"})
    problem(not_json, 400, "invalid_parameter")
    form = http.post(f"{API}/invitations", data={"email": "a@b.co"}, headers=ops)
    problem(form, 415, "unsupported_media_type")
    huge = http.post(f"{API}/api-keys", json={"name": "x" * 70_000}, headers=ops)
    problem(huge, 413, "content_too_large")
    bad_address = http.post(f"{API}/invitations", json={"email": "not an address"}, headers=ops)
    problem(bad_address, 400, "invalid_parameter")


# Clients


def registration(**extra: Any) -> dict[str, Any]:
    return {
        "name": "Recipe app",
        "token_endpoint_auth_method": "client_secret_basic",
        "redirect_uris": ["https://app.example.com/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "scopes": ["openid", "profile", "email"],
        **extra,
    }


def test_a_client_is_registered_once_per_idempotency_key_with_its_secret_shown_in_that_answer(
    http: TestClient, engine: Engine, ops: dict[str, str], grove: Organization
) -> None:
    headers = {**ops, "Idempotency-Key": "recipe-app"}
    first = http.post(f"{API}/clients", json=registration(), headers=headers)
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["client_secret"].startswith("cs_") and body["management_scopes"] == []
    again = http.post(f"{API}/clients", json=registration(), headers=headers)
    assert again.json() == body and again.headers["idempotent-replayed"] == "true"
    with engine.connect() as connection:
        stored = connection.execute(sa.select(clients).where(clients.c.org_id == grove.id)).all()
        answers = connection.execute(sa.text("SELECT answer FROM idempotency_keys")).scalars().all()
    assert len(stored) == 2  # the bot and this one
    assert all(body["client_secret"] not in answer for answer in answers)  # sealed at rest
    shown = http.get(f"{API}/clients/{body['client_id']}", headers=ops)
    assert "client_secret" not in shown.json() and shown.headers["etag"]


def test_a_create_whose_body_holds_an_integer_past_64_bits_is_answered_not_a_500(
    http: TestClient, ops: dict[str, str]
) -> None:
    """The idempotency fingerprint takes any JSON integer (a JWKS is free JSON); Schemathesis found the 500."""
    body = registration(token_endpoint_auth_method="private_key_jwt", jwks={"keys": [{"kty": "RSA"}], "x": 2**70})
    answer = http.post(f"{API}/clients", json=body, headers={**ops, "Idempotency-Key": "big-number"})
    assert answer.status_code == 201, answer.text
    again = http.post(f"{API}/clients", json=body, headers={**ops, "Idempotency-Key": "big-number"})
    assert again.json() == answer.json() and again.headers["idempotent-replayed"] == "true"  # the same fingerprint


def test_registration_stays_within_what_an_organization_may_have(http: TestClient, ops: dict[str, str]) -> None:
    problem(
        http.post(f"{API}/clients", json=registration(scopes=["manage:members"]), headers=ops), 400, "invalid_parameter"
    )
    public = http.post(f"{API}/clients", json=registration(token_endpoint_auth_method="none"), headers=ops)
    problem(public, 400, "invalid_parameter")  # MENUS_PUBLIC_CLIENTS is off
    for uri in ("https://10.0.0.1/bc", "https://169.254.169.254/latest", "https://[fd00::1]/bc"):
        refused = http.post(f"{API}/clients", json=registration(backchannel_logout_uri=uri), headers=ops)
        assert "public internet" in problem(refused, 400, "invalid_parameter")["detail"], uri
    loopback = http.post(
        f"{API}/clients", json=registration(backchannel_logout_uri="http://127.0.0.1:9/bc"), headers=ops
    )
    assert loopback.status_code == 201  # the tests' node allows loopback (MENUS_OUTBOUND_LOOPBACK), as development does


def test_a_client_is_changed_under_if_match_and_deleted_with_its_tokens(http: TestClient, ops: dict[str, str]) -> None:
    created = http.post(
        f"{API}/clients",
        json=registration(grant_types=["client_credentials"], scopes=["members:read"], redirect_uris=[]),
        headers=ops,
    ).json()
    client_id, etag = (
        created["client_id"],
        http.get(f"{API}/clients/{created['client_id']}", headers=ops).headers["etag"],
    )
    problem(change(http, f"{API}/clients/{client_id}", json={"name": "New"}, headers=ops), 428, "precondition_required")
    renamed = change(http, f"{API}/clients/{client_id}", json={"name": "Renamed"}, headers={**ops, "If-Match": etag})
    assert renamed.status_code == 200 and renamed.json()["name"] == "Renamed"
    stale = change(http, f"{API}/clients/{client_id}", json={"name": "Again"}, headers={**ops, "If-Match": etag})
    problem(stale, 412, "precondition_failed")
    token = http.post(
        "/oauth2/token",
        data={"grant_type": "client_credentials"},
        auth=(client_id, created["client_secret"]),
    ).json()["access_token"]
    assert http.delete(f"{API}/clients/{client_id}", headers=ops).status_code == 204
    assert http.get("/directory/members", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    problem(http.get(f"{API}/clients/{client_id}", headers=ops), 404, "not_found")  # a DELETE leaves nothing to read


def test_a_rotated_secret_keeps_the_old_one_working_for_the_grace_and_not_after(
    http: TestClient, ops: dict[str, str], clock: MovableClock, settings: Settings
) -> None:
    created = http.post(
        f"{API}/clients",
        json=registration(grant_types=["client_credentials"], scopes=["members:read"], redirect_uris=[]),
        headers=ops,
    ).json()
    client_id, old = created["client_id"], created["client_secret"]
    rotated = http.post(f"{API}/clients/{client_id}/secret", headers=ops)
    assert rotated.status_code == 200
    new = rotated.json()["client_secret"]
    assert new != old and rotated.json()["previous_secret_expires_at"]

    def works(secret: str) -> bool:
        answer = http.post("/oauth2/token", data={"grant_type": "client_credentials"}, auth=(client_id, secret))
        return answer.status_code == 200

    jwt_client = http.post(
        f"{API}/clients",
        json=registration(
            token_endpoint_auth_method="private_key_jwt",
            jwks={"keys": [flows.rsa_pair("k1").public_jwk]},
        ),
        headers=ops,
    )
    assert jwt_client.status_code == 201, jwt_client.text
    problem(http.post(f"{API}/clients/{jwt_client.json()['client_id']}/secret", headers=ops), 409, "conflict")
    assert works(old) and works(new)
    clock.advance(settings.client_secret_grace - 60)
    assert works(old)
    clock.advance(120)
    assert not works(old) and works(new)


# API keys and the audit trail


def test_api_keys_are_made_once_per_idempotency_key_and_revoked_at_once_by_an_action_that_leaves_them_readable(
    http: TestClient, ops: dict[str, str]
) -> None:
    headers = {**ops, "Idempotency-Key": "k-1"}
    made = http.post(f"{API}/api-keys", json={"name": "nightly"}, headers=headers)
    assert made.status_code == 201 and made.json()["key"].startswith("rmk_")
    assert http.post(f"{API}/api-keys", json={"name": "nightly"}, headers=headers).json()["key"] == made.json()["key"]
    key, key_id = made.json()["key"], made.json()["id"]
    assert http.get("/v1/menus/regions", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    assert http.get(f"{API}/api-keys", headers=ops).json()["total"] == 1
    revoked = http.post(f"{API}/api-keys/{key_id}/revoke", headers=ops)
    assert revoked.status_code == 200 and revoked.headers["cache-control"] == "no-store"
    assert revoked.json()["state"] == "revoked" and revoked.json()["revoked_at"] and "key" not in revoked.json()
    assert http.get("/v1/menus/regions", headers={"Authorization": f"Bearer {key}"}).status_code == 401
    read = http.get(f"{API}/api-keys/{key_id}", headers=ops)
    assert read.status_code == 200 and read.json() == revoked.json()  # a state change: the record stays
    again = http.post(f"{API}/api-keys/{key_id}/revoke", headers=ops)
    assert again.status_code == 200 and again.json() == revoked.json()  # revoking a revoked key changes nothing
    assert http.get(f"{API}/api-keys", headers=ops).json()["total"] == 1
    problem(http.post(f"{API}/api-keys/key_{'0' * 16}/revoke", headers=ops), 404, "not_found")


def test_an_api_key_made_through_the_api_writes_its_audit_line_once_and_a_replay_none(
    http: TestClient, ops: dict[str, str], grove: Organization, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="regional_menus.audit")
    headers = {**ops, "Idempotency-Key": "k-audit"}
    made = http.post(f"{API}/api-keys", json={"name": "nightly"}, headers=headers).json()
    http.post(f"{API}/api-keys", json={"name": "nightly"}, headers=headers)
    lines = [dict(r.fields) for r in caplog.records if r.name == "regional_menus.audit"]  # type: ignore[attr-defined]
    assert [line for line in lines if line["event"] == "api_key_created"] == [
        {"event": "api_key_created", "outcome": "success", "key_id": made["id"], "org_id": grove.id}
    ]


def test_the_audit_trail_says_who_what_when_and_from_where_and_filters_by_kind(
    http: TestClient, ops: dict[str, str], people: dict[str, User]
) -> None:
    http.post(f"{API}/invitations", json={"email": "tom@example.com"}, headers=ops)
    http.post(f"{API}/api-keys", json={"name": "nightly"}, headers=ops)
    etag = http.get(f"{API}/members/{people['member'].id}", headers=ops).headers["etag"]
    change(http, f"{API}/members/{people['member'].id}", json={"role": "admin"}, headers={**ops, "If-Match": etag})
    everything = http.get(f"{API}/audit", headers=ops).json()
    kinds = [entry["kind"] for entry in everything["data"]]
    assert kinds == ["member_role_changed", "api_key_created", "member_invited"]  # newest first
    changed = everything["data"][0]
    assert changed["actor"]["kind"] == "client" and changed["network"] == "testclient"
    assert changed["subject"] == people["member"].id and changed["details"] == {
        "role": "admin",
        "previous_role": "member",
    }
    only = http.get(f"{API}/audit", params={"kind": "api_key_created", "limit": 1}, headers=ops).json()
    assert [entry["kind"] for entry in only["data"]] == ["api_key_created"] and only["next_cursor"] is None
    paged = http.get(f"{API}/audit", params={"limit": 2}, headers=ops)
    assert 'rel="next"' in paged.headers["link"]
    cursor = paged.json()["next_cursor"]
    problem(
        http.get(f"{API}/audit", params={"kind": "member_invited", "cursor": cursor}, headers=ops),
        400,
        "invalid_cursor",
    )


def test_the_membership_versions_move_on_with_each_change(
    http: TestClient, engine: Engine, ops: dict[str, str], people: dict[str, User]
) -> None:
    member = people["member"].id
    for role in ("admin", "member"):
        etag = http.get(f"{API}/members/{member}", headers=ops).headers["etag"]
        change(http, f"{API}/members/{member}", json={"role": role}, headers={**ops, "If-Match": etag})
    with engine.connect() as connection:
        version = connection.scalar(sa.select(memberships.c.version).where(memberships.c.user_id == member))
    assert version == 2
    assert re.fullmatch(r'"[0-9a-f]{16}"', http.get(f"{API}/members/{member}", headers=ops).headers["etag"])


def test_a_public_client_is_registered_where_the_node_allows_public_clients(
    settings: Settings, engine: Engine, catalog: Any, clock: MovableClock, grove: Organization
) -> None:
    import dataclasses

    from tests.support.apps import make_app

    app = make_app(dataclasses.replace(settings, public_clients=True), catalog=catalog, clock=clock)
    with TestClient(app, base_url="http://127.0.0.1:8000") as http:
        ops = bearer(http, bot(engine, grove))
        spa = registration(
            token_endpoint_auth_method="none",
            redirect_uris=["http://127.0.0.1:5173/callback"],
            web_origins=["http://127.0.0.1:5173"],
        )
        made = http.post(f"{API}/clients", json=spa, headers=ops)
        assert made.status_code == 201, made.text
        assert made.json()["client_secret"] is None and made.json()["web_origins"] == ["http://127.0.0.1:5173"]
        confidential_origins = registration(web_origins=["https://app.example.com"])
        problem(http.post(f"{API}/clients", json=confidential_origins, headers=ops), 400, "invalid_parameter")
