import { describe, expect, it } from "vitest";
import { CkanClient } from "../src/ckan/client.ts";
import { CkanQueryRefused } from "../src/ckan/error-answers.ts";
import { searchSql } from "../src/ckan/sql-search.ts";
import { parseConfig } from "../src/config/config.ts";
import { HttpError } from "../src/errors.ts";
import { FIXTURES as fixtures } from "./fixtures/ckan-2.10.ts";
import type { RecordsReader } from "../src/rows/batch.ts";
import { freedWhile } from "./freed-buffers.ts";
import { harness } from "./harness.ts";

const TOKEN = "tok-SECRET-client-5150";
const config = parseConfig({
  CKAN_BASE_URL: "https://portal.example/data/en",
  CKAN_API_TOKEN: TOKEN,
  UPSTREAM_RETRIES: "0",
});

/** A client whose upstream answers with one recorded CKAN 2.10 response. */
function replay(status: number, contentType: string, body: unknown) {
  const seen: Request[] = [];
  const client = new CkanClient(config, async (request) => {
    seen.push(request);
    return new Response(JSON.stringify(body), { status, headers: { "content-type": contentType } });
  });
  return { client, seen };
}

const expectedErrors: Record<string, { status: number; parameter?: string; message: RegExp }> = {
  err_bad_filters_json: { status: 400, parameter: "filters", message: /Cannot parse JSON/ },
  err_bad_token: { status: 403, message: /token cannot read/ },
  err_private_no_token: { status: 403, message: /token cannot read/ },
  err_limit_negative: { status: 400, parameter: "limit", message: /natural number/ },
  err_limit_not_int: { status: 400, parameter: "limit", message: /Invalid integer/ },
  err_missing_resource_id: { status: 400, parameter: "resource_id", message: /Missing value/ },
  err_unknown_fields: { status: 400, parameter: "fields", message: /invalid value "nope"/ },
  err_unknown_filter_field: { status: 400, parameter: "filters", message: /no_such_field/ },
  err_unknown_resource: { status: 404, parameter: "resource_id", message: /not found/ },
  err_unknown_sort_field: { status: 400, parameter: "sort", message: /nope desc/ },
};

describe("CKAN client fed real CKAN 2.10 responses", () => {
  for (const [name, fixture] of Object.entries(fixtures)) {
    it(name, async () => {
      const { client, seen } = replay(fixture.status, fixture.content_type, fixture.body);
      const call = client.search({ ...(fixture.request as { resource_id: string }), limit: 5 });
      if (fixture.status === 200) {
        const result = await call;
        const body = fixture.body as { result: { fields: unknown[]; records: unknown; total?: number } };
        expect(result.fields).toEqual(body.result.fields);
        // Each value arrives as the exact JSON text CKAN wrote; read back, it means what CKAN's JSON says.
        const values =
          typeof result.records === "string"
            ? result.records
            : result.records.map((record) =>
                Array.isArray(record)
                  ? record.map((v) => JSON.parse(v))
                  : Object.fromEntries(Object.entries(record).map(([k, v]) => [k, JSON.parse(v)])),
              );
        expect(values).toEqual(body.result.records);
        expect(result.total).toBe(body.result.total);
      } else {
        const expected = expectedErrors[name];
        expect(expected, `no expectation for ${name}`).toBeDefined();
        const error = await call.then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(HttpError);
        const httpError = error as HttpError;
        expect(httpError.status).toBe(expected!.status);
        expect(httpError.parameter).toBe(expected!.parameter);
        expect(httpError.message).toMatch(expected!.message);
        expect(httpError.message).not.toContain(TOKEN);
      }
      const request = seen[0]!;
      expect(request.method).toBe("POST");
      expect(request.url).toBe("https://portal.example/data/en/api/action/datastore_search");
      expect(request.headers.get("authorization")).toBe(TOKEN);
      expect(request.headers.get("content-type")).toBe("application/json");
    });
  }

  it("keeps CKAN's SQL out of a refused query, and leaves which parameter is at fault to the link (refusals.ts)", async () => {
    const { client } = replay(409, "application/json", {
      success: false,
      error: {
        __type: "Validation Error",
        query: ["Invalid query"],
        info: { statement: ["SELECT secret_sql FROM x"], orig: ["bad"] },
      },
    });
    const error = (await client.search({ resource_id: "x", limit: 1 }).catch((e: unknown) => e)) as HttpError;
    expect(error.status).toBe(400);
    expect(error).toBeInstanceOf(CkanQueryRefused);
    // This search has no filters: the client cannot tell a filter from a sort, so it names neither.
    expect(error.parameter).toBeUndefined();
    expect(error.message).not.toContain("SELECT");
  });

  it("redacts the token when an upstream error echoes it", async () => {
    const { client } = replay(500, "application/json", { success: false, error: { message: `bad header ${TOKEN}` } });
    const error = (await client.search({ resource_id: "x", limit: 1 }).catch((e: unknown) => e)) as HttpError;
    expect(error.status).toBe(502);
    const { client: c2 } = replay(418, "application/json", {
      success: false,
      error: { __type: "Odd", message: `echo ${TOKEN}` },
    });
    const e2 = (await c2.search({ resource_id: "x", limit: 1 }).catch((e: unknown) => e)) as HttpError;
    expect(e2.status).toBe(502);
    expect(e2.message).toContain("echo [redacted]");
    expect(e2.message).not.toContain(TOKEN);
  });
});

describe("a CKAN_BASE_URL no deployed worker can reach", () => {
  it("is the setting's fault, a 503 naming CKAN_BASE_URL, when it points at this machine's own address", async () => {
    for (const base of ["http://127.0.0.1:8788/data/en", "http://localhost:5000"]) {
      const client = new CkanClient(parseConfig({ CKAN_BASE_URL: base, UPSTREAM_RETRIES: "0" }), async () => {
        throw new TypeError("connect ECONNREFUSED");
      });
      const error = await client
        .search({ resource_id: "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2", limit: 1 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(HttpError);
      expect(error).toMatchObject({ status: 503, setting: "CKAN_BASE_URL" });
      expect((error as HttpError).message).toContain("this machine's own address");
    }
  });

  it("is CKAN's fault, a 502, for any other host", async () => {
    const client = new CkanClient(config, async () => {
      throw new TypeError("connect ECONNREFUSED");
    });
    await expect(
      client.search({ resource_id: "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2", limit: 1 }),
    ).rejects.toMatchObject({ status: 502 });
  });
});

describe("what the client tells the page sizer", () => {
  it("frees an answer it refuses at once, even one whose records it would have copied later", async () => {
    // A success without fields: refused, so its CSV records will never be copied.
    const answer = { success: true, result: { records: "1\n" } };
    const { client } = replay(200, "application/json", answer);
    const neverCalled: RecordsReader = () => {
      throw new Error("no records are read from a refused answer");
    };
    const { result: error, freed } = await freedWhile(() =>
      client
        .search({ resource_id: "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2", limit: 2 }, undefined, neverCalled)
        .catch((e) => e),
    );
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).status).toBe(502);
    expect(freed).toContain(JSON.stringify(answer).length);
  });

  it("reports each answer's size in bytes, read before its buffer is released", async () => {
    const answer = { success: true, result: { fields: [{ id: "id", type: "int4" }], records: [[1], [2]], total: 2 } };
    const { client } = replay(200, "application/json", answer);
    const result = await client.search({ resource_id: "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2", limit: 2 });
    expect(result.responseBytes).toBe(JSON.stringify(answer).length);
  });
});

describe("datastore_search_sql through the one client", () => {
  const SQL = 'SELECT (count(*))::text AS "c0" FROM "t"';
  const rows = () =>
    Response.json({
      success: true,
      result: { sql: SQL, records: [{ c0: "3" }], fields: [{ id: "c0", type: "text" }] },
    });
  /** A site whose client answers each statement with the next of `answers` (the last one from then on). */
  function sqlSite(answers: (() => Response | Promise<Response>)[], env: Record<string, string> = {}) {
    const seen: Request[] = [];
    const settings = parseConfig({ CKAN_BASE_URL: "https://portal.example/data/en", CKAN_API_TOKEN: TOKEN, ...env });
    const client = new CkanClient({ ...settings, retryBaseMs: 1 }, async (request) => {
      seen.push(request);
      return answers[Math.min(seen.length, answers.length) - 1]!();
    });
    return { site: { client, facts: { sqlSearch: undefined as boolean | undefined } }, seen };
  }

  it("is retried on a 503 and on a connection reset, as a page is, then answers with the rows", async () => {
    const { site, seen } = sqlSite([
      () => new Response("busy", { status: 503 }),
      () => Promise.reject(new TypeError("connection reset")),
      rows,
    ]);
    expect(await searchSql(site, SQL)).toEqual({
      ok: true,
      records: [{ c0: "3" }],
      fields: [{ id: "c0", type: "text" }],
      truncated: false,
    });
    expect(site.facts.sqlSearch).toBe(true);
    expect(site.client.stats.requests).toBe(3);
    for (const request of seen) {
      expect(request.url).toBe("https://portal.example/data/en/api/action/datastore_search_sql");
      expect(request.headers.get("authorization")).toBe(TOKEN);
      expect(request.redirect).toBe("manual");
      expect(await request.json()).toEqual({ sql: SQL });
    }
  });

  it("counts every attempt against SUBREQUEST_LIMIT: no retry past it, and the worker is told why", async () => {
    const { site, seen } = sqlSite([() => new Response("busy", { status: 503 })], { UPSTREAM_RETRIES: "5" });
    const answer = await searchSql(site, SQL, undefined, 2);
    expect(seen).toHaveLength(2);
    expect(answer).toEqual({ ok: false, why: expect.stringContaining("SUBREQUEST_LIMIT") });
    // Nothing learnt of the site from a statement that never got an answer.
    expect(site.facts.sqlSearch).toBeUndefined();
  });

  it("refuses a redirect, and learns that a site answering 400 with a bare string has SQL search off", async () => {
    const moved = sqlSite([
      () => new Response(null, { status: 302, headers: { location: "https://elsewhere.example/x" } }),
    ]);
    expect(await searchSql(moved.site, SQL)).toEqual({
      ok: false,
      why: expect.stringMatching(/redirect to https:\/\/elsewhere\.example, which this worker does not follow/),
    });
    expect(moved.seen).toHaveLength(1);
    const off = sqlSite([
      () => Response.json("Bad request - Action name not known: datastore_search_sql", { status: 400 }),
    ]);
    expect(await searchSql(off.site, SQL)).toEqual({ ok: false, why: "datastore_search_sql is off on this site" });
    expect(off.site.facts.sqlSearch).toBe(false);
    // Not asked again.
    await searchSql(off.site, SQL);
    expect(off.seen).toHaveLength(1);
  });

  it("never lets a token the upstream echoes out: not in why a statement failed, nor in its columns", async () => {
    const echoes = [
      () =>
        Response.json(
          { success: false, error: { __type: `Validation Error ${TOKEN}`, query: [`syntax error near ${TOKEN}`] } },
          { status: 409 },
        ),
      () => new Response(`<p>${TOKEN}</p>`, { status: 500 }),
      () => new Response(null, { status: 301, headers: { location: `https://${TOKEN}.example/` } }),
      () =>
        Response.json({
          success: true,
          result: { records: [{ c0: "1" }], fields: [{ id: `c0${TOKEN}`, type: `text ${TOKEN.slice(2)}` }] },
        }),
    ];
    for (const echo of echoes) {
      const { site } = sqlSite([echo], { UPSTREAM_RETRIES: "0" });
      const answer = JSON.stringify(await searchSql(site, SQL));
      expect(answer).not.toContain(TOKEN);
      expect(answer).not.toContain(TOKEN.slice(2, 12));
    }
  });
});

describe("an aggregate's statement and the Workers subrequest limit", () => {
  it("counts the statement and its retries against SUBREQUEST_LIMIT before the worker reads the rows itself", async () => {
    const link = "/aggregate.csv?resource=sample&group_by=category&filter.id[lte]=3000";
    const off = () => Response.json("Bad request - Action name not known: datastore_search_sql", { status: 400 });
    const busy = () => new Response("busy", { status: 503 });
    const within = async (limit: number, sql: () => Response): Promise<Response> =>
      harness({
        env: { PAGE_SIZE: "500", SUBREQUEST_LIMIT: String(limit) },
        emulator: { version: "2.12" },
        fault: (_n, body) => (typeof body.sql === "string" ? sql() : undefined),
      }).get(link);
    // The least budget that holds one statement (SQL search off) and the worker's own pages.
    let needed = 30;
    expect((await within(needed, off)).status).toBe(200);
    while ((await within(needed - 1, off)).status === 200) needed--;
    // A statement answered 503 four times (UPSTREAM_RETRIES 3) takes three requests more.
    const refused = await within(needed + 2, busy);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain("SUBREQUEST_LIMIT");
    const fits = await within(needed + 3, busy);
    expect(fits.status).toBe(200);
    expect(fits.headers.get("x-aggregated-by")).toBe("worker");
  });
});
