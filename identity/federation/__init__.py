"""Sign-in with an organization's own identity provider: OpenID Connect federation per organization.

An organization's owner registers one upstream OpenID provider (a *connection*: its issuer, with discovery fetched
and validated, a client id and a sealed secret, the scopes asked for, the default role of the members it makes);
an operator confirms the email domains the organization may claim. The sign-in page asks for the email first: an
address in a claimed domain goes to that organization's provider, everyone else to the password form.

We are the upstream's relying party: authorization code with PKCE, ``state`` and ``nonce`` (``authorization.py``);
RFC 9207 ``iss`` checked, or the mix-up defence of a redirect URI per connection where the provider lacks it; the
code redeemed and the ID token verified against the provider's JWKS, cached and refreshed on an unknown ``kid``
(``token_exchange.py``, ``id_tokens.py``, ``key_sets.py``). The protocol's pieces are Authlib's and joserfc's; the
requests go through the ``UpstreamHttp`` port (``upstream_http.py``), which the service implements with its bounds
(no redirect followed, answers capped, outbound addresses checked).

The owner's side (``administration.py``): the connection shown, saved, deleted and checked, each change an entry of
the organization's trail; the provider's logout tokens are taken once (``logout_tokens.py``).
"""
