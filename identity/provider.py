"""The OpenID Provider: every store and endpoint of the identity domain, built once from its settings."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any

import orjson
from sqlalchemy.engine import Engine

from identity.accounts.device_cookies import DeviceCookiePolicy, DeviceCookies
from identity.accounts.email_verification import EmailVerification
from identity.accounts.organizations import OrganizationStore
from identity.accounts.own_account import OwnAccount
from identity.accounts.password_reset import RESET_REQUESTS, PasswordReset
from identity.accounts.passwords import OWASP_ARGON2ID, PasswordHashing
from identity.accounts.throttle import SignInThrottle, SqlCounters, ThrottlePolicy
from identity.accounts.users import UserStore
from identity.clients.client_auth import ClientAuthenticator
from identity.clients.consents import ConsentStore
from identity.clients.registry import ClientStore
from identity.clients.web_origins import WebOrigins
from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.issuer import Issuer
from identity.common.outbound_uris import OutboundRule
from identity.discovery import metadata
from identity.federation.accounts import FederatedAccounts
from identity.federation.administration import ConnectionAdministration
from identity.federation.attempts import AttemptStore
from identity.federation.backchannel_logout import UpstreamLogout
from identity.federation.connections import ConnectionStore
from identity.federation.domains import DomainClaims
from identity.federation.key_sets import KeySets
from identity.federation.logout_tokens import LogoutTokenLedger
from identity.federation.sessions import FederatedSessions
from identity.federation.sign_in import FederatedSignIn
from identity.federation.token_exchange import TokenExchange
from identity.federation.upstream_http import NoUpstream, UpstreamHttp
from identity.interaction.pending import Pending
from identity.interaction.rp_logout import EndSession
from identity.interaction.sign_in_pages import SignInPages
from identity.interaction.signed_in import SignedIn
from identity.interaction.store import InteractionStore
from identity.keys.sealing import Sealer
from identity.keys.signing_keys import NewKey, SigningKeys, new_private_key
from identity.mail.email_links import EmailLinks
from identity.mail.outbox import DeliveryPolicy, Doorbell, Outbox
from identity.member_directory import Directory
from identity.organizations.applications import Applications
from identity.organizations.idempotency import IdempotencyKeys
from identity.organizations.invitations import Bounds, Invitations
from identity.organizations.members import Members
from identity.organizations.trail import Trail
from identity.purge import Purger
from identity.sessions import backchannel_logout
from identity.sessions.sessions import SessionStore
from identity.tokens.access_tokens import AccessTokenStore
from identity.tokens.codes import CodeStore
from identity.tokens.grants.authorization_code import AuthorizationCodeGrant
from identity.tokens.grants.client_credentials import ClientCredentialsGrant
from identity.tokens.grants.refresh_token import RefreshTokenGrant
from identity.tokens.logout_tokens import LogoutTokens
from identity.tokens.minting import TokenMinter
from identity.tokens.refresh_tokens import RefreshTokenStore
from identity.tokens.revoked_grants import Revoker
from identity.tokens.rfc7009 import TokenRevocation
from identity.tokens.rfc7662 import TokenIntrospection
from identity.tokens.token_endpoint import TokenEndpoint
from identity.tokens.unit_of_work import TokenWork
from identity.tokens.userinfo_claims import UserInfo
from identity.tokens.verification import PublicKeys, TokenVerifier


@dataclass(frozen=True, slots=True)
class Lifetimes:
    access_token: timedelta
    refresh_token: timedelta
    session: timedelta
    interaction: timedelta
    key_publish_delay: timedelta
    code: timedelta  # an authorization code is redeemable this long
    public_refresh_token: timedelta  # a public client's refresh token family lives this long
    email_verification: timedelta  # a mailed verification link opens this long
    password_reset: timedelta  # a mailed password-reset link opens this long


@dataclass(frozen=True, slots=True)
class Tuning:
    """Limits and cache ages of the identity domain (the values: ``service/settings/table.py``)."""

    throttle: ThrottlePolicy
    device_cookies: DeviceCookiePolicy
    signing_keys_max_age: timedelta  # the keys that may sign are used this long before their table is read again
    published_keys_max_age: timedelta  # the verification keys (the JWKS) are used this long before a reload
    published_keys_min_reload: timedelta  # an unknown kid reloads them at most this often
    verified_tokens: int  # access tokens whose verified signature and claims are remembered
    purge_grace: timedelta  # rows past their use are kept this long before the purge deletes them
    delivery: DeliveryPolicy  # how the mail outbox is claimed and retried
    public_clients: bool = False  # whether public clients (auth method none) are known on this node
    web_origins_max_age: timedelta = timedelta(seconds=5)  # the registered web origins are read again this often
    clients_max_age: timedelta = timedelta(seconds=1)  # a client authenticating is read again at most this often
    clients_kept: int = 1024  # clients whose row client authentication keeps in memory at most
    outbound_loopback: bool = False  # outbound URIs may reach loopback addresses (identity/common/outbound_uris.py)
    invitations_per_hour: int = 20  # invitation mails an organization may send an hour
    max_pending_invitations: int = 100  # pending invitations an organization may have
    client_secret_grace: timedelta = timedelta(hours=1)  # a rotated secret keeps working this long
    # federation (identity/federation/): an organization's provider's keys are used this long before they are
    # fetched again, fetched again for an unknown kid at most this often, and its tokens' iat and exp get this leeway
    upstream_keys_max_age: timedelta = timedelta(hours=1)
    upstream_keys_min_refresh: timedelta = timedelta(minutes=1)
    upstream_clock_skew: timedelta = timedelta(minutes=1)


class Provider:
    def __init__(
        self,
        engine: Engine,
        issuer: Issuer,
        lifetimes: Lifetimes,
        tuning: Tuning,
        cursor_key: bytes,
        sealer: Sealer,
        device_key: bytes,  # signs the device cookies of the sign-in throttle (a service secret)
        clock: Clock = SYSTEM_CLOCK,  # every object that reads the time reads this one
        password_hashing: PasswordHashing = OWASP_ARGON2ID,  # the users' passwords (identity/accounts/passwords.py)
        invitation_link: str = "",  # the page an invitation's link opens (the console's), without its query
        upstream: UpstreamHttp | None = None,  # requests to organizations' providers (none: every one is refused)
        new_signing_key: NewKey = new_private_key,  # a new signing key's RSA key (identity/keys/signing_keys.py)
    ) -> None:
        self.issuer = issuer
        self.organizations = OrganizationStore(engine, clock)
        self.users = UserStore(engine, clock, hashing=password_hashing)
        self.clients = ClientStore(
            engine,
            clock,
            recent_max_age=tuning.clients_max_age.total_seconds(),
            recent_size=tuning.clients_kept,
            outbound=OutboundRule(loopback=tuning.outbound_loopback),
        )
        self.keys = signing_keys_of(engine, lifetimes, tuning, sealer, clock, new_key=new_signing_key)
        # rung once a revocation (or a sign-in ending another user's session) that wrote logout tokens commits: the
        # node's worker posts them at once
        self.logout_written = Doorbell()
        self.sessions = SessionStore(engine, lifetimes.session, clock, self.logout_written)
        self.outbox = Outbox(engine, tuning.delivery, clock, sealer)
        throttle = SignInThrottle(SqlCounters(engine, tuning.throttle.window, clock), tuning.throttle)
        self.password_reset = PasswordReset(
            EmailLinks(engine, clock),
            self.outbox,
            self.users,
            Revoker(engine, clock, self.logout_written),
            throttle,
            issuer,
            lifetimes.password_reset,
            # reset requests wait in their own channel for any node's worker, which mails the known addresses
            requests=Outbox(engine, tuning.delivery, clock, sealer, channel=RESET_REQUESTS, one_destination=False),
        )
        self.email_verification = EmailVerification(
            EmailLinks(engine, clock), self.outbox, self.users, issuer, lifetimes.email_verification
        )
        self.own_account = OwnAccount(
            self.users, Revoker(engine, clock, self.logout_written), throttle, self.email_verification
        )
        self.codes = CodeStore(engine, lifetimes.code, clock)
        access_tokens = AccessTokenStore(engine, clock)
        refresh_tokens = RefreshTokenStore(engine, clock)
        revoker = Revoker(engine, clock, self.logout_written)
        public_keys = PublicKeys(self.keys, tuning.published_keys_max_age, tuning.published_keys_min_reload)
        self.minter = TokenMinter(
            self.keys,
            public_keys,
            issuer,
            access_tokens,
            refresh_tokens,
            lifetimes.access_token,
            lifetimes.refresh_token,
            clock,
            public_refresh_ttl=lifetimes.public_refresh_token,
        )
        # Back-Channel Logout 1.0: revocations write logout tokens to their own outbox channel (Revoker); the
        # service's worker posts them, signed at delivery (identity/sessions/backchannel_logout.py)
        self.logout_outbox = Outbox(
            engine, tuning.delivery, clock, channel=backchannel_logout.CHANNEL, one_destination=False
        )
        self.logout_tokens = LogoutTokens(self.clients, self.minter)
        self.verifier = TokenVerifier(issuer, public_keys, access_tokens, tuning.verified_tokens, clock)
        # the units of work of the token and introspection requests a worker runs in a row
        self.token_work = TokenWork(access_tokens, self.verifier.jti_of)
        # organizations run themselves (identity/organizations/): the trail, and invitations (signing up through one)
        self.trail = Trail(engine, cursor_key, clock)
        self.invitations = Invitations(
            engine,
            self.users,
            self.outbox,
            self.trail,
            Bounds(per_hour=tuning.invitations_per_hour, pending=tuning.max_pending_invitations),
            invitation_link,
            cursor_key,
            clock=clock,
        )
        # Federation (identity/federation/): organizations' own providers, their domains, connections and sign-ins
        upstream = upstream or NoUpstream()
        outbound = OutboundRule(loopback=tuning.outbound_loopback)
        upstream_keys = KeySets(
            upstream,
            clock.monotonic,
            max_age=tuning.upstream_keys_max_age.total_seconds(),
            min_refresh=tuning.upstream_keys_min_refresh.total_seconds(),
        )
        skew = int(tuning.upstream_clock_skew.total_seconds())
        now = partial(_epoch_now, clock)
        self.domains = DomainClaims(engine, clock)
        self.connections = ConnectionStore(engine, sealer, upstream, outbound, clock)
        federated_sessions = FederatedSessions(engine, sealer, clock)
        made: list[FederatedSignIn] = []

        def federated(pending: Pending, signed_in: SignedIn) -> FederatedSignIn:
            made.append(
                FederatedSignIn(
                    issuer=issuer,
                    domains=self.domains,
                    connections=self.connections,
                    attempts=AttemptStore(engine, sealer, clock),
                    exchange=TokenExchange(upstream, upstream_keys, now, leeway=skew),
                    accounts=FederatedAccounts(engine, self.users, clock),
                    sessions=federated_sessions,
                    pending=pending,
                    signed_in=signed_in,
                )
            )
            return made[0]

        self.sign_in_pages = SignInPages.build(
            issuer=issuer,
            clients=self.clients,
            users=self.users,
            sessions=self.sessions,
            consents=ConsentStore(engine, clock),
            codes=self.codes,
            interactions=InteractionStore(engine, clock),
            throttle=throttle,
            devices=DeviceCookies(device_key, tuning.device_cookies, clock),
            interaction_ttl=lifetimes.interaction,
            outbox=self.outbox,
            verification=self.email_verification,
            password_reset=self.password_reset,
            clock=clock,
            public_clients=tuning.public_clients,
            invitations=self.invitations,
            home_realm=federated,
        )
        self.federation = made[0]
        self.connection_administration = ConnectionAdministration(
            self.connections, self.domains, self.trail, upstream, self.federation.endpoints
        )
        self.federation_logout = UpstreamLogout(
            self.connections,
            upstream_keys,
            federated_sessions,
            self.sessions,
            revoker,
            now,
            leeway=skew,
            ledger=LogoutTokenLedger(engine),
        )
        self.client_auth = ClientAuthenticator(
            engine, self.clients, issuer, clock, public_clients=tuning.public_clients
        )
        self.web_origins = WebOrigins(
            issuer,
            self.clients,
            enabled=tuning.public_clients,
            max_age=tuning.web_origins_max_age.total_seconds(),
        )
        self.token_endpoint = TokenEndpoint(
            self.client_auth,
            [
                AuthorizationCodeGrant(self.codes, self.minter, revoker, self.users, self.sessions),
                RefreshTokenGrant(refresh_tokens, self.minter, revoker, self.users, self.sessions),
                ClientCredentialsGrant(self.minter, self.organizations),
            ],
            self.web_origins,
        )
        self.userinfo = UserInfo(self.verifier, self.users, self.clients, public_clients=tuning.public_clients)
        self.introspection = TokenIntrospection(
            issuer, self.client_auth, self.clients, self.verifier, refresh_tokens, self.users, self.web_origins, clock
        )
        self.revocation = TokenRevocation(
            issuer,
            self.client_auth,
            self.clients,
            self.verifier,
            access_tokens,
            refresh_tokens,
            revoker,
            self.web_origins,
        )
        self.end_session = EndSession(
            issuer,
            self.clients,
            self.sessions,
            self.verifier,
            revoker,
            self.users,
            public_clients=tuning.public_clients,
            upstream=self.federation,
        )
        self.directory = Directory(engine, self.verifier, cursor_key)
        # members and roles, and the organization's own clients
        self.members = Members(engine, revoker, self.trail, cursor_key, clock)
        self.applications = Applications(
            self.clients,
            self.trail,
            cursor_key,
            public_clients=tuning.public_clients,
            secret_grace=tuning.client_secret_grace,
            clock=clock,
        )
        self.idempotency = IdempotencyKeys(engine, sealer, clock)
        self.purger = Purger(engine, lifetimes.refresh_token, tuning.purge_grace, tuning.throttle.window, clock)

        # OpenID Connect Discovery 1.0 §4.2: the metadata, fixed by the settings, serialised once.
        self.discovery_body = orjson.dumps(self.discovery())

    def start(self) -> None:
        """On start: make sure a key signs (the first start creates it), and read the JWKS it serves."""
        self.keys.ensure()

    def discovery(self) -> dict[str, Any]:
        return metadata(self.issuer, self.token_endpoint.grant_types, public_clients=self.client_auth.public_clients)

    def jwks(self) -> dict[str, Any]:
        return self.keys.jwks()


def _epoch_now(clock: Clock) -> int:
    return int(clock.now().timestamp())


def signing_keys_of(
    engine: Engine,
    lifetimes: Lifetimes,
    tuning: Tuning,
    sealer: Sealer,
    clock: Clock = SYSTEM_CLOCK,
    *,
    new_key: NewKey = new_private_key,
) -> SigningKeys:
    """The signing keys as the provider and the command line use them: published ``key_publish_delay`` before they
    sign, kept to verify as long as an access token lives."""
    return SigningKeys(
        engine,
        lifetimes.key_publish_delay,
        verify_window=lifetimes.access_token,
        sealer=sealer,
        max_age=tuning.signing_keys_max_age,
        clock=clock,
        new_key=new_key,
    )
