"""What federation keeps sealed with the operator's keys (identity/keys/sealing.py), sealed again by ``secrets
rotate``: the connections' client secrets, the pending attempts' PKCE verifiers and the providers' ID tokens of the
sessions started through them. A module of its own, without the relying party's libraries, for the command line."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from identity.federation.tables import federated_sessions, federation_attempts, federation_connections
from identity.keys.resealing import reseal_column
from identity.keys.sealing import Sealer


def reseal(engine: Engine, sealer: Sealer, *, rotate: bool) -> int:
    """Seal what is in clear (with ``rotate``, everything again with the first key); how many rows changed."""
    connections, attempts, sessions = federation_connections.c, federation_attempts.c, federated_sessions.c
    return (
        reseal_column(engine, sealer, connections.org_id, connections.client_secret, rotate=rotate)
        + reseal_column(engine, sealer, attempts.state_hash, attempts.code_verifier, rotate=rotate)
        + reseal_column(engine, sealer, sessions.session_id, sessions.id_token, rotate=rotate)
    )
