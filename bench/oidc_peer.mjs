// node-oidc-provider (panva, npm "oidc-provider", pinned in package.json) configured as the identity
// benchmark's peer: client_credentials with RS256 JWT access tokens (RFC 9068), introspection (RFC 7662),
// JWKS and discovery, on loopback. Usage: node bench/oidc_peer.mjs PORT CLIENT_ID CLIENT_SECRET
// A benchmark's counterpart, never a service: one client, an in-memory adapter, a key made at start.
import { generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const [port, clientId, clientSecret] = process.argv.slice(2);
if (!port || !clientId || !clientSecret) {
  console.error('usage: node bench/oidc_peer.mjs PORT CLIENT_ID CLIENT_SECRET');
  process.exit(2);
}
const issuer = `http://127.0.0.1:${port}`;
// It cannot introspect its JWT access tokens ("Structured JWT Tokens cannot be introspected"): a token asked
// for this resource is opaque, kept in its memory, for the introspection scenario.
const OPAQUE = 'urn:bench:opaque';
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const key = { ...privateKey.export({ format: 'jwk' }), kid: 'bench-1', alg: 'RS256', use: 'sig' };

const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
    scope: 'members:read',
  }],
  scopes: ['members:read'],
  jwks: { keys: [key] },
  routes: { jwks: '/jwks', token: '/oauth2/token', introspection: '/oauth2/introspect' },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => issuer,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => (resource === OPAQUE
        ? { scope: 'members:read', audience: OPAQUE, accessTokenTTL: 600, accessTokenFormat: 'opaque' }
        : {
          scope: 'members:read',
          audience: issuer,
          accessTokenTTL: 600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
    },
  },
});
provider.listen(Number(port), '127.0.0.1');
