"""The OpenID Connect provider's domain: organizations, users, clients, keys, sessions, codes, tokens.

Nothing here knows Connexion or Starlette: the web layer calls in with plain values.
"""
