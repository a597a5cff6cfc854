// Issue 25, item 1: an upstream (a proxy, a CKAN extension, a gateway in front of CKAN) that echoes
// the worker's secrets in every place CKAN has text. No run of 8 characters of any secret may come
// back in an answer, a header or a log line, however the worker quotes or cuts that text.
import { env as testEnv } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { signedPath } from "../src/security/signature.ts";
import { harness, readAll } from "./harness.ts";

// Long, as real CKAN API tokens are (JWTs of 200+ characters): a cut to 200 leaves most of it.
const TOKEN = `eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.${"TOKENbody0123456789".repeat(9)}.sigpart-XYZ`;
const ADMIN = "admin-secret-9d8c7b6a5f4e3d2c1b0a";
const SIGNING_KEY = "signing-key-0f1e2d3c4b5a69788796";
const SECRETS = [TOKEN, ADMIN, SIGNING_KEY];
const ALL = SECRETS.join(" ");
/** The README's promise: no run this long of a secret's characters. */
const SECRET_RUN = 8;

/** Every run of SECRET_RUN characters of a secret that `text` holds. */
function leaks(text: string): string[] {
  const found: string[] = [];
  for (const secret of SECRETS) {
    for (let i = 0; i + SECRET_RUN <= secret.length; i++) {
      const run = secret.slice(i, i + SECRET_RUN);
      if (text.includes(run)) found.push(run);
    }
  }
  return found;
}

const validation = (fields: Record<string, unknown>): Response =>
  Response.json(
    { help: `https://ckan.test/help?${ALL}`, success: false, error: { __type: "Validation Error", ...fields } },
    { status: 409 },
  );

/** The upstream's answers that quote the secrets: in error keys, messages, types, help, field names. */
const echoes: Record<string, () => Response> = {
  "a validation error's message, past the first 20 characters": () =>
    validation({ q: [`the query could not be parsed near ${ALL}`] }),
  "a validation error's key": () => validation({ [`Authorization: ${ALL}`]: ["not allowed"] }),
  "an error type and message": () =>
    Response.json(
      { help: ALL, success: false, error: { __type: `Gateway ${ALL}`, message: `upstream said: ${ALL} ${ALL}` } },
      { status: 418 },
    ),
  "an error's message in a 500 body": () =>
    Response.json({ success: false, error: { message: `proxy: ${ALL}` } }, { status: 500 }),
  "a 200 answer's field names and help": () =>
    Response.json({
      help: ALL,
      success: true,
      result: {
        fields: [
          { id: "id", type: "int4" },
          { id: `echo ${TOKEN}`, type: "text", info: { label: ALL, notes: ALL } },
        ],
        records: [{ id: 1, [`echo ${TOKEN}`]: "x" }],
        total: 1,
      },
    }),
};

describe("an upstream that echoes the secrets: no run of 8 of their characters leaves the worker", () => {
  let logged: string[];
  beforeEach(() => {
    logged = [];
    for (const level of ["log", "info", "warn", "error", "debug"] as const) {
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        logged.push(
          args.map((a) => (a instanceof Error ? `${a.message} ${a.stack} ${String(a.cause)}` : String(a))).join(" "),
        );
      });
    }
  });
  afterEach(() => vi.restoreAllMocks());

  const paths = [
    "/export.csv?resource=sample&limit=5",
    "/export.json?resource=sample&limit=5",
    "/export.csv?resource=sample&limit=5&errors=inline",
    "/export.xlsx?resource=sample&limit=5&errors=inline",
    "/resources",
    "/resources/sample",
    "/health",
  ];
  for (const [where, answer] of Object.entries(echoes)) {
    for (const path of paths) {
      it(`${where}: GET ${path}`, async () => {
        const { get } = harness({
          emulator: { token: TOKEN },
          env: { CKAN_API_TOKEN: TOKEN, ADMIN_TOKEN: ADMIN, LINK_SIGNING_KEY: SIGNING_KEY, UPSTREAM_RETRIES: "0" },
          fault: (_, body) => (body.resource_id !== undefined ? answer() : undefined),
        });
        // With signing on, exports need a signed link and discovery the operator's token.
        const res = path.startsWith("/export")
          ? await get(await signedPath(SIGNING_KEY, path))
          : await get(path, { headers: { authorization: `Bearer ${ADMIN}` } });
        const { text } = await readAll(res);
        const headers = [...res.headers].map(([name, value]) => `${name}: ${value}`).join("\n");
        await new Promise((resolve) => setTimeout(resolve, 10));
        expect(leaks(text)).toEqual([]);
        expect(leaks(headers)).toEqual([]);
        expect(leaks(logged.join("\n"))).toEqual([]);
      });
    }
  }

  it("a snapshot run failing on an upstream that quotes the secrets: its records, manifests, metadata and /snapshots hold none of them", async () => {
    const { get, scheduled } = harness({
      emulator: { token: TOKEN },
      env: {
        CKAN_API_TOKEN: TOKEN,
        ADMIN_TOKEN: ADMIN,
        LINK_SIGNING_KEY: SIGNING_KEY,
        UPSTREAM_RETRIES: "0",
        SNAPSHOT_JOBS: JSON.stringify([{ name: "echoed", resource: "sample", limit: 3000, formats: ["csv", "json"] }]),
      },
      fault: (n) => (n > 1 ? validation({ [`filters ${ALL}`]: [`near ${ALL}`] }) : undefined),
    });
    await scheduled("0 3 * * *", Date.UTC(2026, 0, 3));
    const bucket = (testEnv as { SNAPSHOTS: R2Bucket }).SNAPSHOTS;
    let stored = "";
    for (const object of (await bucket.list({ prefix: "echoed", include: ["customMetadata", "httpMetadata"] }))
      .objects) {
      stored +=
        JSON.stringify([object.key, object.customMetadata, object.httpMetadata]) +
        ((await (await bucket.get(object.key))?.text()) ?? "");
    }
    expect(leaks(stored)).toEqual([]);
    // The upstream's words did reach the run's records and logs, redacted.
    expect(`${stored}\n${logged.join("\n")}`).toContain("[redacted]");
    for (const headers of [{}, { authorization: `Bearer ${ADMIN}` }] as Record<string, string>[]) {
      const res = await get("/snapshots", { headers });
      expect(leaks(await res.text())).toEqual([]);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(leaks(logged.join("\n"))).toEqual([]);
  });

  it("a failure mid-stream quoting the secrets: the #EXPORT INCOMPLETE line holds none of them", async () => {
    const { get } = harness({
      emulator: { token: TOKEN },
      env: {
        CKAN_API_TOKEN: TOKEN,
        ADMIN_TOKEN: ADMIN,
        LINK_SIGNING_KEY: SIGNING_KEY,
        UPSTREAM_RETRIES: "0",
        BUFFER_BYTES: "0",
      },
      fault: (n) => (n > 1 ? validation({ [`filters ${ALL}`]: [`near ${ALL}`] }) : undefined),
    });
    const res = await get(await signedPath(SIGNING_KEY, "/export.csv?resource=sample&limit=3000"));
    const { text, error } = await readAll(res);
    expect(error).toBeDefined();
    const last = text.trimEnd().split("\n").at(-1) ?? "";
    expect(last).toMatch(/^"?#EXPORT INCOMPLETE: CKAN rejected the request \(filters \[redacted\]/);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(leaks(text)).toEqual([]);
    expect(leaks(logged.join("\n"))).toEqual([]);
  });
});
