"""Demo data for ``serve --demo``: an organization, its owner, an API key of the organization, a first-party
client that signs users in, and an application client of the organization (``client_credentials`` with
``members:read``: what the identity API's Swagger UI pre-fills its token form for).

The organization, the user and the clients are created once and keep their ids across restarts, so an app
configured with a demo client keeps working. Keys and client secrets are stored only as hashes and so
cannot be printed again: each demo start makes a new API key (revoking the previous demo key) and gives
each client a new secret, and prints them.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from urllib.parse import urlencode

from sqlalchemy.engine import Engine

from identity.accounts.organizations import OrganizationStore
from identity.accounts.users import UserStore
from identity.api_keys.keys import ApiKeyStore
from identity.clients.registry import ClientStore
from identity.common.issuer import AUTHORIZATION_PATH, TOKEN_PATH, Issuer
from identity.tokens.pkce import challenge_of
from service.mail.transports import outbox_folder
from service.settings import Settings, SmtpServer

KEY_NAME = "demo"
ORG_NAME = "Demo Kitchen"
USER_EMAIL = "demo@example.com"
USER_NAME = "Demo Cook"
USER_PASSWORD = "demo-password"  # a demo account on a local database, printed for the reader
CLIENT_NAME = "Demo app"
SERVICE_CLIENT_NAME = "Demo service"  # client_credentials with members:read: the directory, Swagger UI's token form
REDIRECT_URI = "http://127.0.0.1:8400/callback"  # nothing listens: the code is read from the address bar
SIGNED_OUT_URI = "http://127.0.0.1:8400/signed-out"


@dataclass(frozen=True)
class Demo:
    org_id: str
    user_id: str
    client_id: str  # the same on every start
    client_secret: str  # new on every start
    service_client_id: str  # the application client: the same on every start
    service_client_secret: str  # new on every start
    api_key: str  # new on every start
    instructions: str  # what to print


def prepare(engine: Engine, settings: Settings) -> Demo:
    """Create what is missing, renew the key and the client's secret, and say how to use them."""
    org_id = _organization(OrganizationStore(engine))
    user_id = _user(UserStore(engine), org_id)
    key = _api_key(ApiKeyStore(engine), org_id, user_id)
    clients = ClientStore(engine)
    client_id, secret = _client(clients, org_id)
    service = _service_client(clients, org_id)
    instructions = _instructions(settings, key, (client_id, secret), service)
    return Demo(org_id, user_id, client_id, secret, *service, key, instructions)


def _instructions(settings: Settings, key: str, client: tuple[str, str], service: tuple[str, str]) -> str:
    issuer = Issuer(settings.issuer)
    (client_id, secret), (service_id, service_secret) = client, service
    verifier = secrets.token_urlsafe(48)
    query = urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT_URI,
            "scope": "openid profile email offline_access",
            "state": secrets.token_urlsafe(8),
            "code_challenge": challenge_of(verifier),
            "code_challenge_method": "S256",
        }
    )
    return (
        "\nDemo data is ready.\n"
        f"  API key (shown once): {key}\n"
        f"  Try:     curl -H 'Authorization: Bearer {key}' \\\n"
        f"             '{settings.base_url}/v1/menus/dishes?diet=vegetarian&q=paneer'\n"
        f"  Browse:  {settings.base_url}/v1/ui/ (menus) and {issuer.url}/ui/ (identity)\n"
        f"  Console: {settings.base_url}{settings.console_path}/\n"
        "           (sign in as the user below to see the demo key, or create an account of your own)\n"
        "\nSign in from a browser:\n"
        f"  User:    {USER_EMAIL} / {USER_PASSWORD}\n"
        f"  Client:  {client_id} (the same on every start)\n"
        f"  Secret:  {secret} (new on every start, shown once)\n"
        f"  1. Open  {issuer.endpoint(AUTHORIZATION_PATH)}?{query}\n"
        f"  2. Sign in. The browser then goes to {REDIRECT_URI}?code=…; nothing listens there,\n"
        "     so copy the code from the address bar.\n"
        "  3. Within 60 seconds, exchange it for tokens:\n"
        f"     curl -u '{client_id}:{secret}' -d grant_type=authorization_code -d code=CODE \\\n"
        f"       -d redirect_uri={REDIRECT_URI} -d code_verifier={verifier} \\\n"
        f"       {issuer.endpoint(TOKEN_PATH)}\n"
        "\nCall the directory as an application (client_credentials, scope members:read):\n"
        f"  Client:  {service_id} (the same on every start)\n"
        f"  Secret:  {service_secret} (new on every start, shown once)\n"
        f"  Token:   curl -u '{service_id}:{service_secret}' -d grant_type=client_credentials \\\n"
        f"             -d scope=members:read {issuer.endpoint(TOKEN_PATH)}\n"
        f"  Members: curl -H 'Authorization: Bearer TOKEN' {issuer.endpoint('/directory/members')}\n"
        f"  In {issuer.url}/ui/: Authorize (clientSecretBasic) with this client and secret, then\n"
        "           Try it out on POST /oauth2/token: the form's defaults ask for this token.\n"
        f"\nMail: {_mail_destination(settings)}\n"
    )


def _mail_destination(settings: Settings) -> str:
    """Where the service's mail goes: the SMTP server (without credentials) or the folder (``serve --demo`` sets
    it to the outbox beside the database when neither is set; each mail written is logged with its link)."""
    if settings.smtp_url:
        return f"sent to {SmtpServer.parse(settings.smtp_url).describe()}"
    folder = settings.mail_dir or str(outbox_folder(settings.database_url).absolute())
    return f"written as .eml files to {folder} (MENUS_SMTP_URL is unset); each is logged with its link"


def _service_client(clients: ClientStore, org_id: str) -> tuple[str, str]:
    """The demo's application client (client_credentials, members:read), created once; a new secret on every
    start."""
    for existing in clients.list():
        if (
            existing.name == SERVICE_CLIENT_NAME
            and existing.org_id == org_id
            and "client_credentials" in existing.grants
        ):
            return existing.id, clients.new_secret(existing.id)
    client, secret = clients.create(
        name=SERVICE_CLIENT_NAME,
        org_id=org_id,
        auth_method="client_secret_basic",
        grants=["client_credentials"],
        scopes=["members:read"],
    )
    assert secret is not None
    return client.id, secret


def _api_key(keys: ApiKeyStore, org_id: str, user_id: str) -> str:
    """A new key of the demo organization, made by the demo user, so the demo user's console lists it.
    The previous demo key is revoked, and so is one of an older version's demo (of no organization)."""
    for existing in keys.list():
        if existing.name == KEY_NAME and existing.revoked_at is None and existing.org_id in (org_id, None):
            keys.revoke(existing.id)
    return keys.create(KEY_NAME, org_id=org_id, created_by=user_id)[1]


def _organization(organizations: OrganizationStore) -> str:
    for org in organizations.list():
        if org.name == ORG_NAME:
            return org.id
    return organizations.create(ORG_NAME).id


def _user(users: UserStore, org_id: str) -> str:
    for user in users.list():
        if user.email == USER_EMAIL:
            return user.id
    return users.create(USER_EMAIL, USER_NAME, USER_PASSWORD, [(org_id, "owner")]).id


def _client(clients: ClientStore, org_id: str) -> tuple[str, str]:
    """The demo client, created once; a new secret on every start (only its hash is kept)."""
    for existing in clients.list():
        if existing.name == CLIENT_NAME and existing.org_id == org_id and existing.auth_method == "client_secret_basic":
            return existing.id, clients.new_secret(existing.id)
    client, secret = clients.create(
        name=CLIENT_NAME,
        org_id=org_id,
        auth_method="client_secret_basic",
        redirect_uris=[REDIRECT_URI],
        post_logout_redirect_uris=[SIGNED_OUT_URI],
        first_party=True,
    )
    assert secret is not None
    return client.id, secret
