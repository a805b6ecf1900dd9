import pytest
import sqlalchemy as sa

from identity.accounts.organizations import OrganizationStore
from identity.api_keys.keys import ApiKeyStore, KeyLimitReached, api_keys, hash_key

ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


def test_created_key_is_prefixed_and_authenticates(keys: ApiKeyStore) -> None:
    record, key = keys.create("partner")
    assert key.startswith("rmk_") and len(key) == 47
    assert keys.authenticate(key) == record.id


def test_key_is_stored_only_as_its_hash(keys: ApiKeyStore, engine: sa.Engine) -> None:
    _, key = keys.create("partner")
    with engine.connect() as connection:
        rows = [tuple(row) for row in connection.execute(sa.select(api_keys))]
    assert all(key not in map(str, row) for row in rows)
    assert any(hash_key(key) in row for row in rows)


def test_revoked_key_stops_working(keys: ApiKeyStore) -> None:
    record, key = keys.create("partner")
    keys.revoke(record.id)
    assert keys.authenticate(key) is None


def test_unknown_and_malformed_keys_do_not_authenticate(keys: ApiKeyStore) -> None:
    assert keys.authenticate("rmk_" + "A" * 43) is None
    assert keys.authenticate("not-a-key") is None
    assert keys.authenticate("") is None


def test_list_shows_records_but_never_keys(keys: ApiKeyStore) -> None:
    record, key = keys.create("partner")
    listed = keys.list()
    assert [r.id for r in listed] == [record.id]
    assert key not in repr(listed)


def test_an_organization_may_have_at_most_its_cap_of_active_keys(engine: sa.Engine) -> None:
    acme, beta = OrganizationStore(engine).create("Acme Foods"), OrganizationStore(engine).create("Beta")
    keys = ApiKeyStore(engine, max_per_org=2)
    first, _ = keys.create("one", org_id=acme.id)
    keys.create("two", org_id=acme.id)
    with pytest.raises(KeyLimitReached, match="Acme Foods has 2 active API keys"):
        keys.create("three", org_id=acme.id)
    keys.create("beta's", org_id=beta.id)  # another organization has its own cap
    keys.create("no owner")  # keys of the command line without an organization are not capped
    keys.revoke(first.id)
    keys.create("three", org_id=acme.id)  # a revoked key leaves room
    assert len([k for k in keys.list(acme.id) if k.revoked_at is None]) == 2
