"""The OpenID Provider: every store and endpoint of the identity domain, built once from its settings."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy.engine import Engine

from identity.client_auth import ClientAuthenticator
from identity.clients import ClientStore
from identity.codes import CodeStore
from identity.consents import ConsentStore
from identity.directory import Directory
from identity.discovery import metadata
from identity.end_session import EndSession
from identity.flow import SignInFlow
from identity.grants.authorization_code import AuthorizationCodeGrant
from identity.grants.client_credentials import ClientCredentialsGrant
from identity.grants.refresh_token import RefreshTokenGrant
from identity.interactions import InteractionStore
from identity.introspection import TokenInspector
from identity.issuer import Issuer
from identity.keys import SigningKeys
from identity.organizations import OrganizationStore
from identity.purge import Purger
from identity.sealing import Sealer
from identity.sessions import SessionStore
from identity.throttle import Counters, SignInThrottle, SqlCounters, ThrottlePolicy
from identity.token_endpoint import TokenEndpoint
from identity.tokens import RefreshTokenStore, TokenService
from identity.userinfo import UserInfo
from identity.users import UserStore


@dataclass(frozen=True, slots=True)
class Lifetimes:
    access_token: timedelta
    refresh_token: timedelta
    session: timedelta
    interaction: timedelta
    key_publish_delay: timedelta


@dataclass(frozen=True, slots=True)
class Tuning:
    """Limits and cache ages of the identity domain (the values: ``service/settings.py``)."""

    throttle: ThrottlePolicy
    signing_keys_max_age: timedelta  # the keys that may sign are used this long before their table is read again


class Provider:
    def __init__(
        self,
        engine: Engine,
        issuer: Issuer,
        lifetimes: Lifetimes,
        tuning: Tuning,
        cursor_key: bytes,
        sealer: Sealer,
        throttle_counters: Counters | None = None,  # the sign-in throttle's; the database's by default
    ) -> None:
        self.issuer = issuer
        self.organizations = OrganizationStore(engine)
        self.users = UserStore(engine)
        self.clients = ClientStore(engine)
        self.keys = SigningKeys(
            engine,
            lifetimes.key_publish_delay,
            verify_window=lifetimes.access_token,
            sealer=sealer,
            max_age=tuning.signing_keys_max_age,
        )
        self.sessions = SessionStore(engine, lifetimes.session)
        self.codes = CodeStore(engine)
        self.refresh_tokens = RefreshTokenStore(engine)
        self.tokens = TokenService(engine, self.keys, issuer, lifetimes.access_token, lifetimes.refresh_token)
        self.flow = SignInFlow(
            issuer=issuer,
            clients=self.clients,
            users=self.users,
            sessions=self.sessions,
            consents=ConsentStore(engine),
            codes=self.codes,
            interactions=InteractionStore(engine),
            throttle=SignInThrottle(throttle_counters or SqlCounters(engine), tuning.throttle),
            interaction_ttl=lifetimes.interaction,
        )
        self.client_auth = ClientAuthenticator(engine, self.clients, issuer)
        self.token_endpoint = TokenEndpoint(
            self.client_auth,
            [
                AuthorizationCodeGrant(self.codes, self.tokens, self.users, self.sessions),
                RefreshTokenGrant(self.refresh_tokens, self.tokens, self.users, self.sessions),
                ClientCredentialsGrant(self.tokens, self.organizations),
            ],
        )
        self.userinfo = UserInfo(self.tokens, self.users)
        self.inspector = TokenInspector(
            engine, issuer, self.client_auth, self.clients, self.tokens, self.refresh_tokens, self.users
        )
        self.end_session = EndSession(issuer, self.clients, self.sessions, self.tokens, self.refresh_tokens, self.users)
        self.directory = Directory(engine, self.tokens, cursor_key)
        self.purger = Purger(engine, lifetimes.refresh_token)

    def start(self) -> None:
        """On start: make sure a key signs (the first start creates it)."""
        self.keys.ensure()

    def discovery(self) -> dict[str, Any]:
        return metadata(self.issuer, self.token_endpoint.grant_types)

    def jwks(self) -> dict[str, Any]:
        return self.keys.jwks()
