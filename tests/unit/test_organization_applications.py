"""An organization's own applications on the state database, without the web layer
(identity/organizations/applications.py): what a registration may ask, whose clients an organization sees, the
version a change was read at, the secret's rotation and the management scopes only an owner grants."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from sqlalchemy.engine import Connection, Engine

from identity.accounts.organizations import OrganizationStore
from identity.clients.registry import ClientStore
from identity.common.errors import InvalidInput
from identity.organizations import rules
from identity.organizations.actors import Actor
from identity.organizations.applications import Applications, Changes, Registration, management_scopes, tag
from identity.organizations.trail import Trail
from tests.support.clocks import MovableClock

ON_BOTH_ENGINES = True  # a version compared under each engine's lock (FOR UPDATE; SQLite's writer)

WEB = Registration("Menus app", "client_secret_basic", ["https://app.corp.example/cb"], scopes=["openid", "email"])


class Org:
    def __init__(self, engine: Engine, *, public_clients: bool = False) -> None:
        self.clock = clock = MovableClock()
        orgs = OrganizationStore(engine)
        self.id, other = orgs.create("Corp").id, orgs.create("Rival").id
        self.owner = Actor.member("usr_owner", self.id, "owner", None, "Corp")
        self.admin = Actor.member("usr_admin", self.id, "admin", None, "Corp")
        self.rival = Actor.member("usr_rival", other, "owner", None, "Rival")
        self.apps = Applications(
            ClientStore(engine, clock), Trail(engine, b"k" * 32, clock), b"c" * 32, public_clients=public_clients,
            secret_grace=timedelta(hours=1), clock=clock,
        )  # fmt: skip


@pytest.fixture
def org(engine: Engine) -> Org:
    return Org(engine)


def test_a_registered_application_is_its_organizations_alone(org: Org) -> None:
    client, secret = org.apps.register(org.admin, WEB)
    assert secret and client.org_id == org.id and client.pkce_required and not client.first_party
    assert org.apps.get(org.id, client.id) == client
    with pytest.raises(rules.Unknown):
        org.apps.get(org.rival.org_id, client.id)
    with pytest.raises(rules.Unknown):
        org.apps.change(org.rival, client.id, Changes(name="Taken"))
    assert org.apps.list(org.rival.org_id) == []


@pytest.mark.parametrize(
    ("registration", "said"),
    [
        (Registration("App", "none", ["https://app.corp.example/cb"]), "client authentication must be one of"),
        (Registration("App", "client_secret_basic", grants=["password"]), "unknown grant 'password'"),
        (Registration("App", "client_secret_basic", scopes=["manage:members"]), "granted by an owner"),
    ],
)
def test_a_registration_asks_only_the_methods_grants_and_user_scopes_offered(
    org: Org, registration: Registration, said: str
) -> None:
    with pytest.raises(InvalidInput, match=said):
        org.apps.register(org.owner, registration)


def test_a_public_application_is_registered_only_where_the_node_allows_them(engine: Engine) -> None:
    org = Org(engine, public_clients=True)
    assert "none" in org.apps.auth_methods
    client, secret = org.apps.register(org.owner, Registration("SPA", "none", ["https://spa.corp.example/cb"]))
    assert secret is None and client.public
    with pytest.raises(rules.Conflict, match="has no secret"):
        org.apps.rotate_secret(org.owner, client.id)
    with pytest.raises(rules.Conflict, match="public application"):
        org.apps.set_management_scopes(org.owner, client.id, ["manage:members"])


def test_a_change_read_at_an_earlier_version_is_stale(org: Org) -> None:
    client, _ = org.apps.register(org.owner, WEB)
    read = tag(client)
    changed = org.apps.change(org.owner, client.id, Changes(name="Renamed", changed=("name",)), expected=read)
    assert changed.name == "Renamed" and tag(changed) != read
    with pytest.raises(rules.Stale):
        org.apps.change(org.owner, client.id, Changes(name="Again"), expected=read)
    with pytest.raises(rules.Stale):
        org.apps.delete(org.owner, client.id, expected=read)
    org.apps.delete(org.owner, client.id, expected=tag(changed))
    with pytest.raises(rules.Unknown):
        org.apps.get(org.id, client.id)


class ChangedJustBeforeTheDelete(ClientStore):
    """A clients' store on which another member's change commits between a delete's read and its transaction."""

    def __init__(self, engine: Engine, clock: MovableClock) -> None:
        super().__init__(engine, clock)
        self.change_first: str | None = None

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        changed, self.change_first = self.change_first, None
        if changed is not None:
            self.update(changed, name="Renamed meanwhile")
        with super().transaction() as connection:
            yield connection


def test_a_delete_checks_the_version_under_its_own_lock_not_only_at_its_read(engine: Engine) -> None:
    org = Org(engine)
    clients = ChangedJustBeforeTheDelete(engine, org.clock)
    apps = Applications(
        clients, Trail(engine, b"k" * 32, org.clock), b"c" * 32, public_clients=False,
        secret_grace=timedelta(hours=1), clock=org.clock,
    )  # fmt: skip
    client, _ = apps.register(org.owner, WEB)
    clients.change_first = client.id
    with pytest.raises(rules.Stale):
        apps.delete(org.owner, client.id, expected=tag(client))
    kept = apps.get(org.id, client.id)
    assert kept.name == "Renamed meanwhile"
    apps.delete(org.owner, client.id, expected=tag(kept))
    with pytest.raises(rules.Unknown):
        apps.get(org.id, client.id)


def test_a_rotated_secret_is_new_and_shown_once(org: Org) -> None:
    client, first = org.apps.register(org.owner, WEB)
    rotated, second = org.apps.rotate_secret(org.admin, client.id)
    assert second and second != first and rotated.id == client.id


def test_only_an_owner_grants_management_scopes_which_bring_client_credentials(org: Org) -> None:
    client, _ = org.apps.register(org.owner, WEB)
    with pytest.raises(rules.NotAllowed, match="grant management scopes"):
        org.apps.set_management_scopes(org.admin, client.id, ["manage:members"])
    granted = org.apps.set_management_scopes(org.owner, client.id, ["manage:keys", "not-a-scope", "manage:members"])
    assert management_scopes(granted) == ("manage:members", "manage:keys")
    assert "client_credentials" in granted.grants and {"openid", "email"} <= set(granted.scopes)
    assert management_scopes(org.apps.set_management_scopes(org.owner, client.id, [])) == ()


def test_a_client_does_not_delete_itself_and_members_manage_no_application(org: Org) -> None:
    client, _ = org.apps.register(org.owner, WEB)
    with pytest.raises(rules.Conflict, match="cannot delete itself"):
        org.apps.delete(Actor.client(client.id, org.id, None), client.id)
    with pytest.raises(rules.NotAllowed):
        org.apps.register(Actor.member("usr_m", org.id, "member", None, "Corp"), WEB)


def test_applications_are_paged_oldest_first(org: Org) -> None:
    made = []
    for _ in range(3):
        made.append(org.apps.register(org.owner, WEB)[0].id)
        org.clock.advance(1)
    first = org.apps.page(org.id, limit=2)
    assert [c.id for c in first.clients] == made[:2] and first.total == 3 and first.next_cursor
    rest = org.apps.page(org.id, limit=2, cursor=first.next_cursor)
    assert [c.id for c in rest.clients] == made[2:] and rest.next_cursor is None
