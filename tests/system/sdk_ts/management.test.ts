// The organization's journey with the typescript-fetch client openapi-generator made from the live management document
// (copied beside this file as ./management by tests/system/test_management_sdks.py), against the live service, as the
// Python SDK's script does it. Compiled once; run once a PHASE, the Python side doing between phases what a browser
// does (the teammate signs up through the mailed link, the application signs them in with code + PKCE) and moving the
// service's clock. SERVICE_URL is the service's address, MANAGEMENT_TOKEN a client_credentials token of the
// organization's operations client (every manage:* scope), STATE what earlier phases found (JSON); a phase writes
// what the next ones need to OUT.
import { strict as assert } from "node:assert";
import { writeFileSync } from "node:fs";
import { after, test } from "node:test";

import * as management from "./management/index.js";

const service = process.env.SERVICE_URL ?? "";
const phase = process.env.PHASE ?? "";
const state: Record<string, string> = JSON.parse(process.env.STATE ?? "{}");
const configuration = new management.Configuration({
  basePath: `${service}/management/v1`,
  accessToken: process.env.MANAGEMENT_TOKEN,
});
const members = new management.MembersApi(configuration);
const invitations = new management.InvitationsApi(configuration);
const clients = new management.ClientsApi(configuration);
const audit = new management.AuditApi(configuration);
const found: Record<string, string> = {};

function handOn(): void {
  writeFileSync(process.env.OUT ?? "out.json", JSON.stringify(found));
}

async function refusedWith(call: Promise<unknown>): Promise<management.ResponseError> {
  try {
    await call;
  } catch (error: unknown) {
    assert.ok(error instanceof management.ResponseError);
    return error;
  }
  assert.fail("the call was not refused");
}

if (phase === "invite") {
  test("the members come a page at a time, next_cursor and the Link header agreeing", async () => {
    const first = await members.managementListMembersRaw({ limit: 1 });
    const page = await first.value();
    assert.equal(page.data.length, 1);
    if (page.nextCursor) {
      assert.equal(first.raw.headers.get("link"), `<${service}/management/v1/members?limit=1&cursor=${page.nextCursor}>; rel="next"`);
    } else {
      assert.equal(first.raw.headers.get("link"), null);
    }
  });

  test("a retried invitation makes one, and the same key with another body is refused", async () => {
    const request = { email: state.email, role: management.Role.Member };
    const made = await invitations.managementCreateInvitation({ invitationRequest: request, idempotencyKey: "ts-invite" });
    const again = await invitations.managementCreateInvitationRaw({ invitationRequest: request, idempotencyKey: "ts-invite" });
    assert.equal((await again.value()).id, made.id);
    assert.equal(again.raw.headers.get("idempotent-replayed"), "true");
    const refused = await refusedWith(
      invitations.managementCreateInvitation({ invitationRequest: { email: "other@example.com" }, idempotencyKey: "ts-invite" }),
    );
    assert.equal(refused.response.status, 422);
    const problem = management.ProblemFromJSON(await refused.response.json());
    assert.equal(problem.code, management.ProblemCodeEnum.IdempotencyKeyReused);
  });
}

if (phase === "admin") {
  test("the teammate who joined is made an admin under If-Match, and the If-Match read before is then stale", async () => {
    const page = await members.managementListMembers({});
    const teammate = page.data.find((member) => member.email === state.email);
    assert.ok(teammate && teammate.role === management.Role.Member);
    const read = await members.managementGetMemberRaw({ userId: teammate.userId });
    const etag = read.raw.headers.get("etag") ?? "";
    const change = { role: management.Role.Admin };
    const made = await members.managementUpdateMember({ userId: teammate.userId, ifMatch: etag, memberChange: change });
    assert.equal(made.role, management.Role.Admin);
    const stale = await refusedWith(members.managementUpdateMember({ userId: teammate.userId, ifMatch: etag, memberChange: change }));
    assert.equal(stale.response.status, 412);
    assert.equal(management.ProblemFromJSON(await stale.response.json()).code, management.ProblemCodeEnum.PreconditionFailed);
    found.userId = teammate.userId;
  });

  test("an application is registered, its secret in that answer only", async () => {
    const registration = {
      name: "Grove Timetable",
      tokenEndpointAuthMethod: management.AuthMethod.ClientSecretBasic,
      redirectUris: [state.redirectUri],
      grantTypes: [management.GrantType.AuthorizationCode, management.GrantType.RefreshToken],
      scopes: [management.Scope.Openid, management.Scope.Profile, management.Scope.Email, management.Scope.OfflineAccess],
    };
    const app = await clients.managementCreateClient({ clientRequest: registration, idempotencyKey: "ts-timetable" });
    assert.ok(app.clientSecret?.startsWith("cs_"));
    const read = await clients.managementGetClientRaw({ clientId: app.clientId });
    assert.equal((await read.raw.json()).client_secret, undefined);
    found.clientId = app.clientId;
    found.clientSecret = app.clientSecret ?? "";
  });
}

if (phase === "rotate") {
  test("the secret is rotated: a new one, the old one's grace said", async () => {
    const rotated = await clients.managementRotateClientSecret({ clientId: state.clientId });
    assert.ok(rotated.clientSecret.startsWith("cs_") && rotated.clientSecret !== state.clientSecret);
    assert.ok(rotated.previousSecretExpiresAt.getTime() > Date.now());
    found.clientSecret = rotated.clientSecret;
  });
}

if (phase === "remove") {
  test("the teammate is removed, and the trail lists what was done to them and the application, newest first", async () => {
    await members.managementRemoveMember({ userId: state.userId });
    const page = await members.managementListMembers({});
    assert.ok(page.data.every((member) => member.userId !== state.userId));
    const trail = await audit.managementListAuditEvents({});
    const ours = trail.data.filter((entry) => entry.subject === state.userId || entry.subject === state.clientId);
    const kinds = ours.slice(0, 4).map((entry) => entry.kind);
    assert.deepEqual(kinds, [
      management.AuditKind.MemberRemoved,
      management.AuditKind.ClientSecretRotated,
      management.AuditKind.ClientCreated,
      management.AuditKind.MemberRoleChanged,
    ]);
    const invited = await audit.managementListAuditEvents({ kind: management.AuditKind.MemberInvited });
    assert.ok(invited.data.length >= 1 && invited.data.every((entry) => entry.kind === management.AuditKind.MemberInvited));
  });
}

after(handOn);
