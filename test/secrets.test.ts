import { env as testEnv } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { signedPath } from "../src/security/signature.ts";
import { harness, readAll, TOKEN } from "./harness.ts";

const SIGNING_KEY = "sigkey-SECRET-3b7d0e";
const ADMIN = "admin-SECRET-c41f99";
const SECRETS = [TOKEN, SIGNING_KEY, ADMIN];
const JOBS = JSON.stringify([{ name: "daily", resource: "sample", limit: 20, formats: ["csv", "json"] }]);

/** Every route and error path we know of, each with an upstream fault where one applies. */
const scenarios: {
  name: string;
  path: string;
  method?: string;
  headers?: Record<string, string>;
  fault?: (n: number, body: Record<string, unknown>) => Response | Promise<Response> | undefined;
  env?: Record<string, string>;
  body?: string;
}[] = [
  { name: "csv", path: "/export.csv?resource=sample&limit=5" },
  { name: "json", path: "/export.json?resource=private&limit=5" },
  { name: "head", path: "/export.csv?resource=sample", method: "HEAD" },
  { name: "post", path: "/export.csv?resource=sample", method: "POST" },
  { name: "index", path: "/" },
  { name: "404", path: "/nope" },
  { name: "bad param", path: `/export.csv?resource=sample&limit=${TOKEN}` },
  { name: "unknown param", path: `/export.csv?resource=sample&${TOKEN}=1` },
  { name: "upstream 409", path: "/export.csv?resource=sample&filter.nope=1" },
  { name: "upstream type error", path: "/export.csv?resource=sample&filter.id=abc" },
  { name: "upstream 404", path: "/export.csv?resource_id=00000000-0000-4000-8000-000000000000" },
  {
    name: "upstream echoes the token",
    path: "/export.csv?resource=sample",
    fault: () =>
      Response.json(
        { success: false, error: { __type: "Weird", message: `Authorization: ${TOKEN}` } },
        { status: 418 },
      ),
  },
  {
    name: "upstream 409 echoes the token",
    path: "/export.csv?resource=sample",
    fault: () =>
      Response.json({ success: false, error: { __type: "Validation Error", q: [`bad ${TOKEN}`] } }, { status: 409 }),
  },
  { name: "upstream 500", path: "/export.csv?resource=sample", fault: () => new Response(TOKEN, { status: 500 }) },
  {
    name: "network",
    path: "/export.csv?resource=sample",
    fault: () => Promise.reject(new TypeError(`refused ${TOKEN}`)),
  },
  {
    name: "late failure",
    path: "/export.csv?resource=sample&limit=3000",
    env: { BUFFER_BYTES: "0" },
    fault: (n) => (n > 1 ? new Response(TOKEN, { status: 503 }) : undefined),
  },
  { name: "bad config", path: "/export.csv?resource=sample", env: { MAX_ROWS: TOKEN } },
  { name: "secret pasted into a bound", path: `/export.csv?resource=sample&q=${TOKEN.repeat(100)}` },
  { name: "admin token as a filter", path: `/export.csv?resource=sample&filter.${ADMIN}=1` },
  { name: "snapshot listing", path: "/snapshots" },
  { name: "aggregate", path: "/aggregate.csv?resource=private&group_by=category&measures=count,sum(amount)" },
  {
    name: "aggregate, SQL answer echoes the token",
    path: "/aggregate.csv?resource=sample&group_by=category",
    fault: (_n, body) =>
      typeof body.sql === "string"
        ? Response.json(
            { success: false, error: { __type: "Validation Error", query: [`bad ${TOKEN}`] } },
            { status: 409 },
          )
        : undefined,
  },
  { name: "snapshot listing as admin", path: "/snapshots", headers: { authorization: `Bearer ${ADMIN}` } },
  { name: "snapshot file", path: "/snapshots/daily/latest.csv" },
  { name: "snapshot manifest", path: "/snapshots/daily/manifest.json" },
  { name: "snapshot unknown", path: "/snapshots/nope/latest.csv" },
  { name: "snapshot run, no auth", path: "/snapshots/daily/run", method: "POST" },
  {
    name: "snapshot run, wrong auth",
    path: "/snapshots/daily/run",
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}x` },
  },
  { name: "snapshot run", path: "/snapshots/daily/run", method: "POST", headers: { authorization: `Bearer ${ADMIN}` } },
  {
    name: "snapshot run, failing upstream",
    path: "/snapshots/daily/run",
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}` },
    fault: () => new Response(TOKEN, { status: 500 }),
  },
  { name: "preflight", path: "/export.csv?resource=sample", method: "OPTIONS" },
  { name: "expired link", path: "/export.csv?resource=sample&exp=1&sig=x" },
  { name: "resources", path: "/resources", headers: { authorization: `Bearer ${ADMIN}` } },
  { name: "resources, no auth", path: "/resources" },
  {
    name: "resources, upstream echoes the token",
    path: "/resources",
    headers: { authorization: `Bearer ${ADMIN}` },
    fault: () => new Response(TOKEN, { status: 500 }),
  },
  { name: "resource", path: "/resources/sample", headers: { authorization: `Bearer ${ADMIN}` } },
  { name: "resource, unknown", path: `/resources/${TOKEN}`, headers: { authorization: `Bearer ${ADMIN}` } },
  {
    name: "resource, upstream 409 echoes the token",
    path: "/resources/sample",
    headers: { authorization: `Bearer ${ADMIN}` },
    fault: () =>
      Response.json(
        { success: false, error: { __type: "Validation Error", fields: [`bad ${TOKEN}`] } },
        { status: 409 },
      ),
  },
  { name: "unknown column hint", path: "/export.csv?resource=sample&fields=id,nope" },
  { name: "openapi", path: "/openapi.json" },
  { name: "index page", path: "/", headers: { accept: "text/html" } },
  {
    name: "sign a link",
    path: "/links",
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify({ link: "/export.csv?resource=sample&limit=5", expires_in: 3600 }),
  },
  {
    name: "sign a link, no auth",
    path: "/links",
    method: "POST",
    body: JSON.stringify({ link: `/export.csv?resource=sample&q=${TOKEN}` }),
  },
  {
    name: "sign a bad link",
    path: "/links",
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}` },
    body: JSON.stringify({ link: `/export.csv?resource=sample&limit=${SIGNING_KEY}` }),
  },
];

describe.each([
  ["unsigned links", false],
  ["signed links", true],
])("no secret ever leaves the worker, with %s", (_, signing) => {
  let logged: string[];
  beforeEach(() => {
    logged = [];
    for (const level of ["log", "info", "warn", "error", "debug"] as const) {
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        logged.push(args.map((a) => (a instanceof Error ? `${a.message} ${a.stack}` : String(a))).join(" "));
      });
    }
  });
  afterEach(() => vi.restoreAllMocks());

  for (const scenario of scenarios) {
    it(`on ${scenario.name}`, async () => {
      const { get, calls, scheduled } = harness({
        env: {
          UPSTREAM_RETRIES: "0",
          ADMIN_TOKEN: ADMIN,
          SNAPSHOT_JOBS: JOBS,
          ...(signing ? { LINK_SIGNING_KEY: SIGNING_KEY } : {}),
          ...scenario.env,
        },
        ...(scenario.fault ? { fault: scenario.fault } : {}),
      });
      if (scenario.path.startsWith("/snapshots")) await scheduled("0 3 * * *", Date.UTC(2026, 0, 2));
      const path =
        signing && scenario.method === undefined ? await signedPath(SIGNING_KEY, scenario.path) : scenario.path;
      const res = await get(path, {
        method: scenario.method ?? "GET",
        ...(scenario.headers ? { headers: scenario.headers } : {}),
        ...(scenario.body ? { body: scenario.body } : {}),
      });
      const { text } = await readAll(res);
      const headers = [...res.headers].map(([name, value]) => `${name}: ${value}`).join("\n");
      for (const secret of SECRETS) {
        expect(text).not.toContain(secret);
        expect(headers).not.toContain(secret);
      }
      // The token did go upstream to datastore_search (and datastore_search_sql, for private tables), where it belongs, and nowhere else (resource_show is asked anonymously).
      for (const call of calls)
        expect(call.authorization).toBe(/\/datastore_search(_sql)?$/.test(call.url) ? TOKEN : null);
      await new Promise((resolve) => setTimeout(resolve, 10));
      for (const line of logged) for (const secret of SECRETS) expect(line).not.toContain(secret);
      const bucket = (testEnv as { SNAPSHOTS: R2Bucket }).SNAPSHOTS;
      for (const object of (await bucket.list({ include: ["customMetadata", "httpMetadata"] })).objects) {
        const metadata = JSON.stringify([object.key, object.customMetadata, object.httpMetadata]);
        for (const secret of SECRETS) expect(metadata).not.toContain(secret);
      }
    });
  }
});
