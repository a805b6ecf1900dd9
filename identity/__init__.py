"""The OpenID Connect provider's domain, one package a concept.

Nothing here knows Connexion or Starlette: the web layer calls in with plain values. The packages stand in layers
(``[tool.importlinter]`` in pyproject.toml), each importing only those below it:

- ``provider``: every store and endpoint wired once;
- ``purge`` (deleting what nothing can use any more), ``discovery`` (RFC 8414) and ``member_directory``;
- ``interaction``: the browser sign-in (the authorization request, the interaction policy and a handler a page) and
  RP-initiated logout;
- ``organizations``: members, roles and invitations, the organization's clients and keys, its audit trail;
- ``tokens``: the token endpoint and its grants, codes, access and refresh tokens, introspection, revocation;
- ``clients``: registration, client authentication, web origins, consents;
- ``sessions`` and ``api_keys``;
- ``accounts``: users, passwords, organizations, throttling, verification and resets;
- ``mail``: the outbox and mailed links;
- ``keys``: signing keys and secrets at rest;
- ``common``: the clock, the tables, the errors, the issuer, the audit trail.
"""
