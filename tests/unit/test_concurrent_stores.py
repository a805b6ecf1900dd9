"""Stores that read a row and then write it, raced by threads released at once, on SQLite and PostgreSQL: each one
locks or upserts (CONTRIBUTING.md, "Stores under concurrency"), so that no race ends in an ``IntegrityError`` or a
write lost."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

import pytest
from sqlalchemy.engine import Engine

from identity.accounts.organizations import Organization, OrganizationStore
from identity.accounts.password_reset import RESET_REQUESTS, PasswordReset
from identity.accounts.throttle import SignInThrottle
from identity.accounts.users import User, UserStore
from identity.api_keys.keys import ApiKeyStore, KeyLimitReached
from identity.clients.consents import ConsentStore
from identity.clients.registry import ClientStore
from identity.common.clock import SYSTEM_CLOCK
from identity.common.errors import ErrorPage
from identity.common.issuer import Issuer
from identity.interaction.authorization_request import AuthorizationRequest
from identity.interaction.store import InteractionStore, new_interaction
from identity.mail.email_links import RESET_PASSWORD, EmailLinks
from identity.mail.outbox import Outbox
from identity.tokens.revoked_grants import Revoker
from tests.support.defaults import DELIVERY, THROTTLE
from tests.support.identity_fixtures import PASSWORD
from tests.support.simultaneous import at_once

ON_BOTH_ENGINES = True
ROUNDS = 5


@pytest.fixture
def acme(engine: Engine) -> Organization:
    return OrganizationStore(engine).create("Acme Foods")


@pytest.fixture
def ana(engine: Engine, acme: Organization) -> User:
    return UserStore(engine).create("ana@example.com", "Ana Lima", PASSWORD, [(acme.id, "owner")])


def test_consents_given_at_once_for_different_scopes_keep_every_scope(
    engine: Engine, acme: Organization, ana: User
) -> None:
    consents = ConsentStore(engine)
    for round_ in range(ROUNDS):
        client, _ = ClientStore(engine).create(
            name=f"Planner {round_}",
            org_id=acme.id,
            auth_method="client_secret_basic",
            redirect_uris=["https://a.example/cb"],
        )
        if round_ % 2:  # the row there before the race (an update of it), or not (two first inserts)
            consents.grant(ana.id, client.id, acme.id, ["openid"])
        results = at_once(
            partial(consents.grant, ana.id, client.id, acme.id, ["openid", "profile"]),
            partial(consents.grant, ana.id, client.id, acme.id, ["openid", "email"]),
        )
        assert results == [None, None]
        assert consents.covers(ana.id, client.id, acme.id, ["openid", "profile", "email"])


def test_key_creations_at_once_never_pass_the_organizations_cap(engine: Engine, acme: Organization) -> None:
    keys = ApiKeyStore(engine, max_per_org=5)
    results = at_once(*(partial(keys.create, f"key {n}", org_id=acme.id) for n in range(12)))
    assert sum(isinstance(result, tuple) for result in results) == 5
    assert all(isinstance(result, tuple | KeyLimitReached) for result in results), results
    assert len(keys.list(acme.id)) == 5


def test_sign_ups_at_once_with_one_organization_name_each_get_their_account_and_a_slug(engine: Engine) -> None:
    users = UserStore(engine)
    results = at_once(*(partial(users.sign_up, f"cook{n}@example.com", "Cook", PASSWORD, "Acme") for n in range(4)))
    assert all(isinstance(result, User) for result in results), results
    slugs = sorted(org.slug for org in OrganizationStore(engine).list())
    assert slugs == ["acme", "acme-2", "acme-3", "acme-4"]


def test_two_reset_links_followed_at_once_set_one_password(engine: Engine, ana: User) -> None:
    links = EmailLinks(engine)
    resets = PasswordReset(
        links, Outbox(engine, DELIVERY), UserStore(engine), Revoker(engine), SignInThrottle(engine, THROTTLE),
        Issuer("http://127.0.0.1:8000"), timedelta(minutes=30),
        requests=Outbox(engine, DELIVERY, channel=RESET_REQUESTS, one_destination=False),
    )  # fmt: skip
    for round_ in range(ROUNDS):
        with engine.begin() as connection:
            tokens = [links.issue(connection, RESET_PASSWORD, ana.id, ana.email, timedelta(minutes=30)) for _ in "ab"]
        passwords = [f"new password {round_}a", f"new password {round_}b"]
        results = at_once(
            *(partial(resets.reset, token, password) for token, password in zip(tokens, passwords, strict=True))
        )
        won = [password for result, password in zip(results, passwords, strict=True) if result == ana.id]
        assert len(won) == 1 and sum(isinstance(result, ErrorPage) for result in results) == 1, results
        users = UserStore(engine)
        assert users.authenticate(ana.email, won[0]) is not None
        assert all(users.authenticate(ana.email, password) is None for password in passwords if password != won[0])


def test_a_finished_interaction_is_never_written_again_by_a_late_post_of_its_form(engine: Engine) -> None:
    interactions = InteractionStore(engine)
    request = AuthorizationRequest(client_id="cli_1", redirect_uri="https://a.example/cb", scope=("openid",))
    interaction = new_interaction(request, "binding", SYSTEM_CLOCK.now() + timedelta(minutes=15))
    interactions.add(interaction)
    assert interactions.update(interaction.changed(consented=True))
    assert interactions.delete(interaction.id)  # a concurrent post of its form finished it
    assert not interactions.update(interaction.changed(org_chosen=True))
    assert interactions.get(interaction.id) is None
