// An aggregate as the programs that read it see it, over real HTTP: the worker in `wrangler dev`
// over the CKAN emulator's sample table. DuckDB reads the Parquet aggregate (PostgreSQL's result
// types as Parquet types), LibreOffice opens the XLSX one (numbers as number cells), and both hold
// the CSV aggregate's values. The edge cache's ETag and 304, HEAD and CORS work as for exports.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";
import Papa from "papaparse";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMULATOR_RESOURCES } from "../../emulator/index.ts";
import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";
import { convertToCsv, findOffice, NO_OFFICE } from "./office.mts";
import { startWorker, type WorkerProcess } from "./harness.mts";

const skipOffice = findOffice() === undefined && process.env.CI !== "true";
if (skipOffice) process.stderr.write(`test/http: ${NO_OFFICE}\n`);

const AGGREGATE =
  "resource=sample&group_by=category,month(created)&measures=count,sum(amount),avg(ratio),max(amount)&filter.id[lte]=20000";

const csvRows = (text: string, newline: "\n" | "\r\n"): string[][] =>
  Papa.parse<string[]>(text.replace(/\r?\n$/, ""), { newline }).data;

describe("an aggregate read by DuckDB and LibreOffice, over HTTP", () => {
  let emulator: EmulatorServer;
  let worker: WorkerProcess;
  let dir: string;
  let db: DuckDBConnection;
  let csv: string[][];

  beforeAll(async () => {
    emulator = await startEmulatorServer({ port: 0, version: "2.12" });
    dir = await mkdtemp(join(tmpdir(), "datastore-export-aggregate-"));
    db = await (await DuckDBInstance.create(":memory:")).connect();
    worker = await startWorker({
      vars: {
        CKAN_BASE_URL: emulator.base,
        RESOURCES: JSON.stringify(EMULATOR_RESOURCES),
        PAGE_SIZE: "2000",
        CACHE_TTL_SECONDS: "300",
      },
    });
    const response = await fetch(`${worker.url}/aggregate.csv?${AGGREGATE}`);
    expect(response.status).toBe(200);
    csv = csvRows(await response.text(), "\r\n");
  }, 120_000);

  afterAll(async () => {
    db?.closeSync();
    await Promise.allSettled([worker?.stop(), emulator?.close(), dir && rm(dir, { recursive: true, force: true })]);
  }, 30_000);

  it("Parquet: PostgreSQL's result types (count BIGINT, a bucket TIMESTAMP, avg of a float DOUBLE, numeric exact text) and the CSV's values", async () => {
    const response = await fetch(`${worker.url}/aggregate.parquet?${AGGREGATE}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("x-aggregated-by")).toBe("worker");
    const path = join(dir, "aggregate.parquet");
    await writeFile(path, new Uint8Array(await response.arrayBuffer()));
    const described = (await db.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${path}')`))
      .getRows()
      .map((r) => [String(r[0]), String(r[1])]);
    expect(described).toEqual([
      ["category", "VARCHAR"],
      ["month(created)", "TIMESTAMP"],
      ["count", "BIGINT"],
      ["sum(amount)", "VARCHAR"],
      ["avg(ratio)", "DOUBLE"],
      ["max(amount)", "VARCHAR"],
    ]);
    // DuckDB's own text of each value, beside the CSV aggregate's.
    const rows = (
      await db.runAndReadAll(
        `SELECT category, strftime("month(created)", '%Y-%m-%dT%H:%M:%S'), "count"::VARCHAR, "sum(amount)", "avg(ratio)", "max(amount)" FROM read_parquet('${path}')`,
      )
    ).getRows();
    expect(rows.length).toBe(csv.length - 1);
    for (const [i, row] of rows.entries()) {
      const want = csv[i + 1]!;
      expect(row.slice(0, 4).map((v) => (v === null ? "" : String(v)))).toEqual(want.slice(0, 4));
      expect(row[4] === null ? "" : row[4]).toBe(want[4] === "" ? "" : Number(want[4]));
      expect(row[5] === null ? "" : row[5]).toBe(want[5]);
    }
    // The exact sums let DuckDB add them up without a digit lost.
    const total = (
      await db.runAndReadAll(`SELECT sum(CAST("sum(amount)" AS DECIMAL(38, 14)))::VARCHAR FROM read_parquet('${path}')`)
    ).getRows()[0]![0];
    const whole = (
      await (
        await fetch(`${worker.url}/aggregate.csv?resource=sample&measures=sum(amount)&filter.id[lte]=20000`)
      ).text()
    ).split("\r\n")[1]!;
    expect(Number(total)).toBe(Number(whole));
    expect(String(total).replace(/0+$/, "")).toBe(whole.replace(/0+$/, ""));
  }, 60_000);

  it.skipIf(skipOffice)(
    "XLSX: LibreOffice shows the CSV aggregate's values, numbers as number cells",
    async () => {
      const response = await fetch(`${worker.url}/aggregate.xlsx?${AGGREGATE}`);
      expect(response.status).toBe(200);
      const office = csvRows(await convertToCsv("aggregate.xlsx", new Uint8Array(await response.arrayBuffer())), "\n");
      expect(office[0]).toEqual(csv[0]);
      expect(office.length).toBe(csv.length);
      for (const [r, row] of csv.slice(1).entries()) {
        const got = office[r + 1]!;
        expect(got[0]).toBe(row[0]);
        // The bucket as a date-time cell, whatever LibreOffice's way of writing it.
        expect(Date.parse(`${got[1]!.replace(" ", "T")}Z`)).toBe(Date.parse(`${row[1]}Z`));
        for (const c of [2, 3, 4, 5]) {
          const [x, y] = [Number(got[c]), Number(row[c])];
          // A number cell: the value to the 15 significant digits a spreadsheet keeps.
          expect(Number.isFinite(x), `${csv[0]![c]} ${got[c]}`).toBe(true);
          expect(Math.abs(x - y)).toBeLessThanOrEqual(Math.abs(y) * 1e-14);
        }
      }
    },
    120_000,
  );

  it("is cached at the edge with an ETag, answers 304 to it, HEAD without computing, and CORS like exports", async () => {
    const url = `${worker.url}/aggregate.json?${AGGREGATE}`;
    const first = await fetch(url, { headers: { origin: "https://dashboard.example" } });
    expect(first.status).toBe(200);
    expect(first.headers.get("access-control-allow-origin")).toBe("*");
    const etag = first.headers.get("etag");
    expect(etag).toMatch(/^"/);
    await first.arrayBuffer();
    const again = await fetch(url);
    expect(again.headers.get("x-cache")).toMatch(/HIT|MISS/);
    const conditional = await fetch(url, { headers: { "if-none-match": etag! } });
    expect(conditional.status).toBe(304);
    const head = await fetch(url, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe("application/json; charset=utf-8");
  }, 60_000);
});
