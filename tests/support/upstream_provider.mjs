// node-oidc-provider (panva, npm "oidc-provider", pinned in package.json) as an organization's own identity
// provider, for the federation tests (tests/support/upstream.py starts it): on loopback, with its own sign-in
// pages (devInteractions: any login and any password), Dynamic Client Registration behind an initial access
// token (the test registers our connection's redirect and back-channel logout URIs once it knows them),
// RP-Initiated Logout and Back-Channel Logout 1.0.
//
// Usage: node tests/support/upstream_provider.mjs PORT INITIAL_ACCESS_TOKEN
//
// Accounts: the login typed on its sign-in page is the account's `sub`. Its claims are those the test set with
// `PUT /test/accounts/<sub>` (a JSON object: email, email_verified, name); an account never set is an address
// when the login is one, verified. A test fixture, never a service: in-memory adapter, a key made at start.
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import Provider from 'oidc-provider';

const [port, initialAccessToken] = process.argv.slice(2);
if (!port || !initialAccessToken) {
  console.error('usage: node tests/support/upstream_provider.mjs PORT INITIAL_ACCESS_TOKEN');
  process.exit(2);
}
const issuer = `http://127.0.0.1:${port}`;
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const kid = createHash('sha256').update(randomBytes(16)).digest('hex').slice(0, 16);
const key = { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
const accounts = new Map(); // sub -> claims the test set

function claimsOf(sub) {
  const set = accounts.get(sub);
  if (set) return { ...set, sub };
  const address = sub.includes('@') ? sub : undefined;
  return address ? { sub, email: address, email_verified: true, name: address.split('@')[0] } : { sub };
}

const provider = new Provider(issuer, {
  jwks: { keys: [key] },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  scopes: ['openid', 'email', 'profile'],
  // Its outgoing requests (the logout tokens it posts) go to the service under test on loopback, which its own
  // check of special-use addresses refuses: its documented hook for outgoing requests sends those without the
  // checking dispatcher it hands in; any other address keeps the check.
  fetch(url, options) {
    if (new URL(url).hostname !== '127.0.0.1') return globalThis.fetch(url, options);
    const { dispatcher, ...unchecked } = options;
    return globalThis.fetch(url, unchecked);
  },
  async findAccount(ctx, sub) {
    return { accountId: sub, async claims() { return claimsOf(sub); } };
  },
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true, initialAccessToken },
    backchannelLogout: { enabled: true },
    rpInitiatedLogout: { enabled: true },
  },
});
provider.proxy = false;

// The test's way to set an account's claims (a change of address at the provider, an unverified address).
provider.use(async (ctx, next) => {
  const match = /^\/test\/accounts\/([^/]+)$/.exec(ctx.path);
  if (!match || ctx.method !== 'PUT') {
    await next();
    return;
  }
  const chunks = [];
  for await (const chunk of ctx.req) chunks.push(chunk);
  accounts.set(decodeURIComponent(match[1]), JSON.parse(Buffer.concat(chunks).toString('utf8')));
  ctx.status = 204;
});

// What it did with its logout tokens, for the test's log (upstream.log).
provider.on('backchannel.success', (ctx, client, accountId, sid) => console.log(`backchannel logout posted: ${client.clientId} ${sid}`));
provider.on('backchannel.error', (ctx, err, client) => console.log(`backchannel logout failed: ${client.clientId} ${err}`));

provider.listen(Number(port), '127.0.0.1', () => console.log(`upstream provider at ${issuer}`));
