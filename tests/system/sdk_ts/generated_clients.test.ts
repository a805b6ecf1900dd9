// The typescript-fetch clients openapi-generator made from the live menus and identity documents (copied beside
// this file as ./menus and ./identity by tests/system/test_openapi_generator_clients.py), against the live service.
// SERVICE_URL is the service's address, MENUS_KEY an API key, CLIENT_ID and CLIENT_SECRET a client_credentials client.
import { strict as assert } from "node:assert";
import { test } from "node:test";

import * as identity from "./identity/index.js";
import * as menus from "./menus/index.js";

const service = process.env.SERVICE_URL ?? "";
const PAGE_SIZE = 10;

const dishes = new menus.DishesApi(new menus.Configuration({ basePath: `${service}/v1`, accessToken: process.env.MENUS_KEY }));
const tokens = new identity.TokensApi(
  new identity.Configuration({ basePath: service, username: process.env.CLIENT_ID, password: process.env.CLIENT_SECRET }),
);

function nextUrl(link: string | null): string | null {
  if (link === null) {
    return null;
  }
  const found = /^<([^>]*)>; rel="next"$/.exec(link);
  assert.ok(found, link);
  return found[1] ?? null;
}

test("the dishes come page by page, next_cursor and the Link header agreeing", async () => {
  const slugs: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const answer = await dishes.menusListDishesRaw({ course: menus.Course.Dessert, limit: PAGE_SIZE, cursor });
    const page = await answer.value();
    slugs.push(...page.data.map((dish) => dish.slug));
    const link = nextUrl(answer.raw.headers.get("link"));
    if (page.nextCursor === null || page.nextCursor === undefined) {
      assert.equal(link, null);
      assert.equal(slugs.length, page.total);
      break;
    }
    assert.equal(link, `${service}/v1/menus/dishes?course=dessert&limit=${PAGE_SIZE}&cursor=${page.nextCursor}`);
    cursor = page.nextCursor;
  }
  assert.equal(new Set(slugs).size, slugs.length);
  assert.ok(slugs.length > PAGE_SIZE);
});

/** The error response a call was refused with (the client throws ResponseError for every error status). */
async function refusal(call: Promise<unknown>): Promise<Response> {
  try {
    await call;
  } catch (error: unknown) {
    assert.ok(error instanceof menus.ResponseError || error instanceof identity.ResponseError, String(error));
    return error.response;
  }
  throw new Error("the call was not refused");
}

test("a refused cursor is parsed into the Problem model", async () => {
  const response = await refusal(dishes.menusListDishes({ cursor: "not-a-cursor" }));
  assert.equal(response.status, 400);
  const problem = menus.ProblemFromJSON(await response.json());
  assert.equal(problem.code, menus.ProblemCodeEnum.InvalidCursor);
  assert.equal(problem.status, 400);
});

test("an application token is issued and introspected as active", async () => {
  const issued = await tokens.tokenExchange({ grantType: "client_credentials", scope: "members:read" });
  assert.equal(issued.scope, "members:read");
  const introspected = await tokens.introspectionIntrospect({ token: issued.accessToken });
  assert.equal(introspected.active, true);
  assert.equal(introspected.clientId, process.env.CLIENT_ID);
});

test("an unsupported grant is parsed into the OAuthError model", async () => {
  const response = await refusal(tokens.tokenExchange({ grantType: "password" }));
  assert.equal(response.status, 400);
  const refused = identity.OAuthErrorFromJSON(await response.json());
  assert.equal(refused.error, identity.OAuthErrorErrorEnum.UnsupportedGrantType);
  assert.ok(refused.errorDescription);
});
