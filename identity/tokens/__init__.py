"""Tokens: the token endpoint and its grants (``grants/``), authorization codes, access and refresh tokens and
their records, introspection (``rfc7662``) and revocation (``rfc7009``), minting and verifying JWTs, UserInfo, logout
tokens, and revoking a grant with everything issued from it."""
