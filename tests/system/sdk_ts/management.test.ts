// The typescript-fetch client openapi-generator made from the live management document (copied beside this file as
// ./management by tests/system/test_management_sdks.py), against the live service. SERVICE_URL is the service's
// address, MANAGEMENT_TOKEN a client_credentials token of the organization's operations client (every manage:* scope).
import { strict as assert } from "node:assert";
import { test } from "node:test";

import * as management from "./management/index.js";

const service = process.env.SERVICE_URL ?? "";
const configuration = new management.Configuration({
  basePath: `${service}/management/v1`,
  accessToken: process.env.MANAGEMENT_TOKEN,
});
const members = new management.MembersApi(configuration);
const invitations = new management.InvitationsApi(configuration);
const audit = new management.AuditApi(configuration);

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
  const request = { email: "ts-invitee@example.com", role: management.Role.Member };
  const made = await invitations.managementCreateInvitation({ invitationRequest: request, idempotencyKey: "ts-1" });
  const again = await invitations.managementCreateInvitationRaw({ invitationRequest: request, idempotencyKey: "ts-1" });
  assert.equal((await again.value()).id, made.id);
  assert.equal(again.raw.headers.get("idempotent-replayed"), "true");
  let refused: unknown = null;
  try {
    await invitations.managementCreateInvitation({ invitationRequest: { email: "other@example.com" }, idempotencyKey: "ts-1" });
  } catch (error: unknown) {
    refused = error;
  }
  assert.ok(refused instanceof management.ResponseError);
  assert.equal(refused.response.status, 422);
  const problem = management.ProblemFromJSON(await refused.response.json());
  assert.equal(problem.code, management.ProblemCodeEnum.IdempotencyKeyReused);
});

test("a stale If-Match is refused with 412 and the trail lists what was done", async () => {
  const page = await members.managementListMembers({});
  const someone = page.data.find((member) => member.role !== management.Role.Owner) ?? page.data[0];
  assert.ok(someone);
  await assert.rejects(
    members.managementUpdateMember({ userId: someone.userId, ifMatch: '"stale"', memberChange: { role: management.Role.Member } }),
    (error: unknown) => error instanceof management.ResponseError && error.response.status === 412,
  );
  const trail = await audit.managementListAuditEvents({ kind: management.AuditKind.MemberInvited });
  assert.ok(trail.data.every((entry) => entry.kind === management.AuditKind.MemberInvited));
  assert.ok(trail.data.length >= 1);
});
