// One aggregate, two ways, one answer: the worker in `wrangler dev` over the CKAN 2.12 emulator with
// SQL search on (its datastore_search_sql is a real PostgreSQL, PGlite) computes each aggregate in
// PostgreSQL (X-Aggregated-By: ckan-sql); a second worker over the same tables with SQL search off
// (CKAN's default) computes it from the rows' pages (X-Aggregated-By: worker). The two answers
// must be the same bytes: every count, every digit of every sum and average, every min and max as
// CKAN writes it, the groups in the same order.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMULATOR_RESOURCES } from "../../emulator/index.ts";
import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";
import { startWorker, type WorkerProcess } from "./harness.mts";

const EDGE_MEASURES = [
  "count",
  "count(amount)",
  "sum(amount)",
  "avg(amount)",
  "min(amount)",
  "max(amount)",
  "sum(ratio)",
  "avg(ratio)",
  "min(ratio)",
  "max(ratio)",
  "sum(id)",
  "avg(id)",
  "min(created)",
  "max(created)",
  "min(day)",
  "max(name)",
].join(",");

const AGGREGATES = [
  `resource=edge&group_by=category&measures=${EDGE_MEASURES}`,
  `resource=edge&measures=${EDGE_MEASURES}`,
  "resource=edge&group_by=month(created),active&measures=count,sum(amount),avg(ratio)",
  "resource=edge&group_by=year(day)&measures=count,min(day),max(day),count(day)",
  "resource=edge&group_by=hour(created)&measures=count&sort=count desc&limit=7&offset=2",
  "resource=edge&group_by=name&measures=count,min(formula),max(note)&limit=60",
  "resource=edge&group_by=amount&measures=count&sort=amount desc&limit=40",
  "resource=edge&group_by=amount&measures=count&sort=amount desc nulls last&limit=40",
  "resource=edge&group_by=ratio&measures=count&sort=ratio&limit=40",
  "resource=edge&group_by=category&measures=count,sum(amount)&filter.category=alpha&filter.category=beta&filter.amount[gte]=0",
  "resource=edge&group_by=category&measures=count,max(created)&filter.created[lt]=2020-01-20T00:00:00&filter.id[gt]=100",
  "resource=edge&measures=count,sum(amount),avg(amount)&filter.id=-1",
  "resource=sample&group_by=category,month(created)&measures=count,sum(amount),avg(ratio),avg(amount)",
  "resource=sample&group_by=active&measures=count,min(amount),max(amount),avg(id)&sort=avg(id) desc",
  // q: CKAN's full-text search, as datastore_search applies it and as plainto_tsquery does in SQL.
  "resource=edge&q=glacier&group_by=category&measures=count,sum(amount),max(created)",
  "resource=sample&q=river&group_by=month(created)&measures=count,avg(amount)&sort=count desc&limit=5&offset=1",
  "resource=sample&q=glacier&filter.active=true&measures=count,min(created),max(created)",
  // An offset past the last group: no rows, and the groups still counted.
  "resource=edge&group_by=category&measures=count&offset=1000",
];

describe("aggregates computed by PostgreSQL and by the worker", () => {
  let withSql: EmulatorServer;
  let withoutSql: EmulatorServer;
  let sqlWorker: WorkerProcess;
  let pagingWorker: WorkerProcess;

  beforeAll(async () => {
    [withSql, withoutSql] = await Promise.all([
      startEmulatorServer({ port: 0, version: "2.12", sql: true }),
      startEmulatorServer({ port: 0, version: "2.12", sql: false }),
    ]);
    // PGlite loads a table the first time a statement names it: the sample's 100,000 rows take longer than CKAN's usual answer.
    const vars = (url: string) => ({
      CKAN_BASE_URL: url,
      RESOURCES: JSON.stringify(EMULATOR_RESOURCES),
      PAGE_SIZE: "5000",
      CACHE_TTL_SECONDS: "0",
      UPSTREAM_TIMEOUT_SECONDS: "180",
    });
    sqlWorker = await startWorker({ vars: vars(withSql.base) });
    pagingWorker = await startWorker({ vars: vars(withoutSql.base) });
  }, 180_000);

  afterAll(async () => {
    await Promise.allSettled([sqlWorker?.stop(), pagingWorker?.stop(), withSql?.close(), withoutSql?.close()]);
  }, 30_000);

  it.each(AGGREGATES)(
    "%s: the same bytes both ways, CSV and JSON",
    async (aggregate) => {
      for (const format of ["csv", "json"]) {
        // One after the other: both emulators run in this process, and PGlite loading a table holds it.
        const bySql = await fetch(`${sqlWorker.url}/aggregate.${format}?${aggregate}`);
        const byPages = await fetch(`${pagingWorker.url}/aggregate.${format}?${aggregate}`);
        expect(bySql.status).toBe(200);
        expect(byPages.status).toBe(200);
        expect(bySql.headers.get("x-aggregated-by")).toBe("ckan-sql");
        expect(byPages.headers.get("x-aggregated-by")).toBe("worker");
        // The number of groups before limit and offset, both ways.
        expect(bySql.headers.get("x-total-count")).toBe(byPages.headers.get("x-total-count"));
        expect(bySql.headers.get("x-total-count")).toMatch(/^\d+$/);
        const [sql, pages] = [await bySql.text(), await byPages.text()];
        expect(sql.split("\n").length).toBeGreaterThan(1);
        expect(sql).toBe(pages);
      }
    },
    240_000,
  );

  it("/health says which way each worker computes", async () => {
    const health = async (worker: WorkerProcess) =>
      ((await (await fetch(`${worker.url}/health`)).json()) as { aggregates: unknown }).aggregates;
    expect(await health(sqlWorker)).toEqual({ datastore_search_sql: "on", computed_by: "ckan-sql" });
    expect(await health(pagingWorker)).toEqual({ datastore_search_sql: "off", computed_by: "worker" });
  });
});
