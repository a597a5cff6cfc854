/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";
import { harness } from "./harness.ts";

// An aggregate on a site with `datastore_search_sql`: one statement, no rows on the wire, answered
// here from CKAN 2.12's recorded answers (test/fixtures/ckan-2.12-sql, recorded from a real CKAN
// with SQL search on and off). Whatever goes wrong with SQL, the worker computes the same rows.

interface Recorded {
  status: number;
  content_type: string;
  body: unknown;
  raw_body_text?: string;
}
const RECORDED = import.meta.glob<Recorded>("./fixtures/ckan-2.12-sql/*.json", { eager: true, import: "default" });
const recorded = (name: string): Response => {
  const answer = RECORDED[`./fixtures/ckan-2.12-sql/${name}.json`]!;
  const text = answer.content_type.startsWith("text/html")
    ? "<!DOCTYPE html><title>Error [500] - CKAN</title>"
    : (answer.raw_body_text ?? JSON.stringify(answer.body));
  return new Response(text, { status: answer.status, headers: { "content-type": answer.content_type } });
};

const sqlAnswer = (records: Record<string, string | null>[], extra: Record<string, unknown> = {}): Response =>
  Response.json({
    help: "",
    success: true,
    result: { sql: "", records, fields: Object.keys(records[0] ?? {}).map((id) => ({ id, type: "text" })), ...extra },
  });

const isSql = (body: Record<string, unknown>): boolean => typeof body.sql === "string";
const env = { PAGE_SIZE: "500" };
const LINK =
  "/aggregate.csv?resource=sample&group_by=category,month(created)&measures=count,sum(amount),max(created)&filter.id[lte]=3000&q=glacier";

describe("aggregates through datastore_search_sql", () => {
  it("ask one statement and read no rows, answering X-Aggregated-By: ckan-sql with the cells CKAN's datastore_search writes", async () => {
    const statements: string[] = [];
    const { get, calls } = harness({
      env,
      emulator: { version: "2.12" },
      fault: (_n, body) => {
        if (!isSql(body)) return undefined;
        statements.push(body.sql as string);
        return sqlAnswer([
          { c0: "alpha", c1: "2020-01-01 00:00:00", c2: "535", c3: "-1692618.04", c4: "2020-01-31 23:57:45.769201" },
          { c0: "alpha", c1: null, c2: "3", c3: null, c4: null },
          { c0: null, c1: "2020-02-01 00:00:00", c2: "1", c3: "NaN", c4: "2020-02-01 00:57:45" },
        ]);
      },
    });
    const response = await get(LINK);
    expect(response.status).toBe(200);
    expect(response.headers.get("x-aggregated-by")).toBe("ckan-sql");
    expect(await response.text()).toBe(
      "category,month(created),count,sum(amount),max(created)\r\n" +
        "alpha,2020-01-01T00:00:00,535,-1692618.04,2020-01-31T23:57:45.769\r\n" +
        "alpha,,3,,\r\n" +
        ",2020-02-01T00:00:00,1,NaN,2020-02-01T00:57:45.000\r\n",
    );
    expect(statements).toEqual([
      `SELECT ("category")::text AS "c0", (date_trunc('month', "created"))::text AS "c1", (count(*))::text AS "c2", (sum("amount"))::text AS "c3", (max("created"))::text AS "c4", (count(*) OVER ())::text AS "groups" ` +
        `FROM "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2" WHERE "id" <= E'3000' AND "_full_text" @@ plainto_tsquery('english', E'glacier') ` +
        `GROUP BY "category", date_trunc('month', "created") ORDER BY "category" COLLATE "C" ASC, date_trunc('month', "created") ASC LIMIT 100001`,
    ]);
    // The table's columns (one request for no rows, asked both ways on a site met for the first time), and no page of rows.
    expect(calls.filter((c) => !isSql(c.body) && c.body.limit !== 0)).toEqual([]);
  });

  it("say how many groups there are before limit and offset (X-Total-Count), and refuse more than MAX_GROUPS as the worker does, whatever the limit", async () => {
    let groups = "4";
    const { get } = harness({
      env: { ...env, MAX_GROUPS: "5" },
      emulator: { version: "2.12" },
      fault: (_n, body) => (isSql(body) ? sqlAnswer([{ c0: "alpha", c1: "3", groups }]) : undefined),
    });
    const link = "/aggregate.csv?resource=sample&group_by=category&sort=count desc&limit=1&errors=status";
    const top = await get(link);
    expect(top.status).toBe(200);
    expect(top.headers.get("x-aggregated-by")).toBe("ckan-sql");
    expect(top.headers.get("x-total-count")).toBe("4");
    expect(await top.text()).toBe("category,count\r\nalpha,3\r\n");
    groups = "6";
    const refused = await get(`${link}&_=2`);
    expect(refused.status).toBe(400);
    const body = (await refused.json()) as { error: { message: string; parameter: string; setting: string } };
    expect(body.error).toMatchObject({ parameter: "group_by", setting: "MAX_GROUPS" });
    expect(body.error.message).toContain("more than 5 groups");
    // The worker, on a portal without SQL search, refuses the same link past MAX_GROUPS.
    const worker = harness({ env: { ...env, MAX_GROUPS: "5" } });
    const byWorker = await worker.get("/aggregate.csv?resource=edge&group_by=id&sort=count desc&limit=1&errors=status");
    expect(byWorker.status).toBe(400);
    expect(((await byWorker.json()) as { error: { setting: string } }).error.setting).toBe("MAX_GROUPS");
  });

  it("when SQL search is off (CKAN's default since 2.10), computes in the worker, asks once per isolate and /health says so", async () => {
    let asked = 0;
    const { get } = harness({
      env,
      fault: (_n, body) => {
        if (!isSql(body)) return undefined;
        asked++;
        return recorded("v2.11_sql_off");
      },
    });
    const health = async () => ((await (await get("/health")).json()) as { aggregates: unknown }).aggregates;
    expect(await health()).toEqual({ datastore_search_sql: "not asked yet", computed_by: "worker" });
    const first = await get("/aggregate.csv?resource=sample&group_by=category&filter.active=true");
    expect(first.headers.get("x-aggregated-by")).toBe("worker");
    const second = await get("/aggregate.csv?resource=sample&group_by=category&filter.active=false");
    expect(second.headers.get("x-aggregated-by")).toBe("worker");
    expect(asked).toBe(1);
    expect(await health()).toEqual({ datastore_search_sql: "off", computed_by: "worker" });
  });

  it.each([
    ["a function the site's allow-list refuses (403)", () => recorded("err_function_not_allowed")],
    ["a PostgreSQL error (409)", () => recorded("err_syntax")],
    ["CKAN's HTML error page (500, as for a NaN float)", () => recorded("err_float_nan_500")],
    ["an answer cut at rows_max", () => sqlAnswer([{ c0: "alpha", c1: "1" }], { records_truncated: true })],
    ["no answer", () => Promise.reject(new TypeError("network down"))],
  ])("when the statement fails with %s, the worker computes the same rows", async (_what, failure) => {
    const link = "/aggregate.json?resource=edge&group_by=category&measures=count,sum(amount),avg(ratio),min(created)";
    const worker = harness({ env });
    const expected = await (await worker.get(link)).text();
    const { get } = harness({ env, fault: (_n, body) => (isSql(body) ? failure() : undefined) });
    const response = await get(link);
    expect(response.status).toBe(200);
    expect(response.headers.get("x-aggregated-by")).toBe("worker");
    expect(await response.text()).toBe(expected);
  });
});
