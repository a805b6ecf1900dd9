// A small single-page app signing in with oidc-client-ts, as a browser app would: code flow with PKCE,
// no secret (a public client), refresh tokens, revocation and RP-initiated sign-out. The test bundles it
// with esbuild into a temporary folder and serves it from an origin of its own (tests/support/browser_app.py).
// Each step writes its outcome into #status (data-step: the step reached, or "error").
import { IndexedDbDPoPStore, UserManager, WebStorageStateStore } from "oidc-client-ts";

const config = window.SPA_CONFIG;
const manager = new UserManager({
  authority: config.authority,
  client_id: config.clientId,
  redirect_uri: `${location.origin}/callback`,
  post_logout_redirect_uri: `${location.origin}/signed-out`,
  scope: "openid profile email offline_access",
  userStore: new WebStorageStateStore({ store: window.sessionStorage }),
  automaticSilentRenew: false,
  loadUserInfo: false,
  // config.dpop "on": a DPoP proof with each token request (RFC 9449), as an app set up for DPoP sends it.
  ...(config.dpop === "on" ? { dpop: { store: new IndexedDbDPoPStore() } } : {}),
});
const status = document.getElementById("status");

async function step(name, action) {
  try {
    const outcome = await action();
    status.textContent = JSON.stringify(outcome);
    status.dataset.step = name;
  } catch (error) {
    status.textContent = `${name}: ${error && error.message ? error.message : String(error)}`;
    status.dataset.step = "error";
  }
}

async function userinfo(accessToken) {
  const answer = await fetch(`${config.authority}/oauth2/userinfo`, {
    headers: { Authorization: `Bearer ${accessToken}` },
  });
  return { status: answer.status, body: answer.ok ? await answer.json() : null };
}

async function signedIn() {
  const user = await manager.signinRedirectCallback();
  history.replaceState(null, "", "/");
  return { sub: user.profile.sub, scope: user.scope, refresh: Boolean(user.refresh_token), tokenType: user.token_type };
}

async function profile() {
  const user = await manager.getUser();
  return userinfo(user.access_token);
}

async function renew() {
  const before = await manager.getUser();
  const after = await manager.signinSilent(); // with a refresh token: the refresh_token grant, no iframe
  return {
    newAccessToken: after.access_token !== before.access_token,
    rotatedRefreshToken: Boolean(after.refresh_token) && after.refresh_token !== before.refresh_token,
    sub: after.profile.sub,
  };
}

async function revoke() {
  const user = await manager.getUser();
  await manager.revokeTokens(["access_token", "refresh_token"]);
  const stored = await manager.getUser();
  // The revoked access token goes back to the test, which checks that userinfo refuses it: a 401 here
  // would be a console error of the browser's own.
  return { revokedAccessToken: user.access_token, refreshTokenKept: Boolean(stored.refresh_token) };
}

async function signedOut() {
  await manager.signoutRedirectCallback();
  await manager.removeUser();
  return { signedOut: true, user: await manager.getUser() };
}

document.getElementById("sign-in").addEventListener("click", () => step("redirecting", () => manager.signinRedirect()));
document.getElementById("profile").addEventListener("click", () => step("profile", profile));
document.getElementById("renew").addEventListener("click", () => step("renewed", renew));
document.getElementById("revoke").addEventListener("click", () => step("revoked", revoke));
document.getElementById("sign-out").addEventListener("click", () => step("signing-out", () => manager.signoutRedirect()));

if (location.pathname === "/callback") {
  step("signed-in", signedIn);
} else if (location.pathname === "/signed-out") {
  step("signed-out", signedOut);
} else {
  status.dataset.step = "ready";
}
