"""The words the identity domain registers: client auth methods, grants, scopes and membership roles.

Kept apart from the stores, and importing nothing, so that the command line can offer them as choices (and print
its ``--help``) without loading SQLAlchemy.
"""

AUTH_METHODS = ("client_secret_basic", "client_secret_post", "private_key_jwt")  # confidential clients
PUBLIC = "none"  # RFC 7591 §2: the auth method of a public client, which has no credentials
REGISTRABLE_AUTH_METHODS = (*AUTH_METHODS, PUBLIC)
GRANTS = ("authorization_code", "refresh_token", "client_credentials")
# what an organization's own clients may ask for with client_credentials to use the management API
# (openapi/management.yaml), once an owner granted them (identity/organizations/applications.py)
MANAGEMENT_SCOPES = ("manage:members", "manage:clients", "manage:keys", "manage:audit", "manage:connection")
SCOPES = ("openid", "profile", "email", "offline_access", "members:read", *MANAGEMENT_SCOPES)
ROLES = ("owner", "admin", "member")  # a user's role in an organization
