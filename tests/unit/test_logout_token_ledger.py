"""A provider's logout token is taken once (identity/federation/logout_tokens.py): by its issuer and ``jti``, in
one statement, on SQLite and on PostgreSQL, until the purge after its expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine

from identity.accounts.organizations import OrganizationStore
from identity.federation import logout_tokens
from identity.federation.logout_tokens import LogoutTokenLedger

ON_BOTH_ENGINES = True  # the INSERT … ON CONFLICT DO NOTHING of each engine

ISSUER = "https://id.corp.example"


def test_a_jti_is_taken_once_per_issuer(engine: Engine) -> None:
    org = OrganizationStore(engine).create("Corp")
    ledger = LogoutTokenLedger(engine)
    expiry = int(datetime.now(UTC).timestamp()) + 120
    assert ledger.take(org.id, ISSUER, "jti-1", expiry) is True
    assert ledger.take(org.id, ISSUER, "jti-1", expiry) is False  # a replay
    assert ledger.take(org.id, "https://other.example", "jti-1", expiry) is True  # another provider's jti


def test_the_purge_forgets_a_token_only_after_its_expiry(engine: Engine) -> None:
    org = OrganizationStore(engine).create("Corp")
    ledger = LogoutTokenLedger(engine)
    now = datetime.now(UTC)
    ledger.take(org.id, ISSUER, "jti-1", int(now.timestamp()) + 60)
    with engine.begin() as connection:
        assert logout_tokens.purge(connection, now) == 0
    with engine.begin() as connection:
        assert logout_tokens.purge(connection, now + timedelta(seconds=61)) == 1
    assert ledger.take(org.id, ISSUER, "jti-1", int(now.timestamp()) + 60) is True  # forgotten: past its expiry
