// The Parquet file an analyst downloads, read by DuckDB (its Node package ships the engine): the
// worker in `wrangler dev` over the CKAN emulator's edge table (every column type, many pages),
// column by column typed as CKAN types them, and value for value the worker's own CSV export
// (read by DuckDB's CSV reader, which tells an empty string from an empty cell).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance, type DuckDBConnection, type DuckDBListValue, type DuckDBValue } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMULATOR_RESOURCES } from "../../emulator/index.ts";
import { EDGE_ROWS } from "../../emulator/edge-rows.ts";
import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";
import { startWorker, type WorkerProcess } from "./harness.mts";

/** DuckDB's type of each edge column, from CKAN's. */
const EDGE_TYPES: Record<string, string> = {
  id: "INTEGER",
  amount: "VARCHAR",
  ratio: "DOUBLE",
  category: "VARCHAR",
  name: "VARCHAR",
  note: "VARCHAR",
  formula: "VARCHAR",
  created: "TIMESTAMP",
  day: "DATE",
  active: "BOOLEAN",
  tags: "JSON",
  meta: "JSON",
};

/** CKAN's text of a timestamp (`2020-01-01T00:16:17.500`, or with microseconds) in microseconds. */
function micros(text: string): bigint {
  const m = /^(.{19})(?:\.(\d{1,6}))?$/.exec(text);
  if (m === null) throw new Error(`not a timestamp: ${text}`);
  return BigInt(Date.parse(`${m[1]}Z`)) * 1000n + BigInt((m[2] ?? "").padEnd(6, "0"));
}

/** Whether DuckDB's value of a Parquet cell is the CSV export's text for it, by the column's type. */
function same(type: string, value: DuckDBValue, csv: string | null): boolean {
  if (csv === null || value === null) return csv === value;
  switch (type) {
    case "INTEGER":
      return value === Number(csv) && String(value) === csv;
    case "DOUBLE":
      return Object.is(value, Number(csv));
    case "BOOLEAN":
      return String(value) === csv;
    case "TIMESTAMP":
      return (value as { micros: bigint }).micros === micros(csv);
    case "DATE":
      return (value as { days: number }).days * 86_400_000 === Date.parse(csv);
    default:
      return value === csv;
  }
}

describe("a Parquet export read by DuckDB", () => {
  let emulator: EmulatorServer;
  let worker: WorkerProcess;
  let dir: string;
  let db: DuckDBConnection;

  beforeAll(async () => {
    emulator = await startEmulatorServer({ port: 0 });
    dir = await mkdtemp(join(tmpdir(), "datastore-export-parquet-"));
    db = await (await DuckDBInstance.create(":memory:")).connect();
    worker = await startWorker({
      vars: {
        CKAN_BASE_URL: `${emulator.url}/data/en`,
        RESOURCES: JSON.stringify(EMULATOR_RESOURCES),
        PAGE_SIZE: "500",
        CACHE_TTL_SECONDS: "0",
      },
    });
  }, 120_000);

  afterAll(async () => {
    db?.closeSync();
    await Promise.allSettled([worker?.stop(), emulator?.close(), dir && rm(dir, { recursive: true, force: true })]);
  }, 30_000);

  let files = 0;
  /** GETs an export and saves it for DuckDB to read. */
  async function download(query: string): Promise<{ path: string; response: Response }> {
    const response = await fetch(`${worker.url}${query}`);
    const path = join(dir, `${++files}.${query.slice(8, query.indexOf("?"))}`);
    await writeFile(path, new Uint8Array(await response.arrayBuffer()));
    return { path, response };
  }

  /** Column names and DuckDB types, and the rows, of a query over a file. */
  async function read(sql: string): Promise<{ names: string[]; types: string[]; rows: DuckDBValue[][] }> {
    const described = await db.runAndReadAll(`DESCRIBE ${sql}`);
    const result = await db.runAndReadAll(sql);
    return {
      names: described.getRows().map((r) => String(r[0])),
      types: described.getRows().map((r) => String(r[1])),
      rows: result.getRows(),
    };
  }

  /** The Parquet export of `query` beside its CSV export: same names, typed columns, every value the same. */
  async function compare(query: string): Promise<{ names: string[]; types: string[]; rows: number; path: string }> {
    const parquet = await download(`/export.parquet?${query}`);
    expect(parquet.response.status).toBe(200);
    expect(parquet.response.headers.get("content-type")).toBe("application/vnd.apache.parquet");
    const csv = await download(`/export.csv?${query}&formula_guard=0`);
    expect(csv.response.status).toBe(200);
    const got = await read(`SELECT * FROM read_parquet('${parquet.path}')`);
    const want = await read(
      `SELECT * FROM read_csv('${csv.path}', header = true, all_varchar = true, allow_quoted_nulls = false, delim = ',', quote = '"', escape = '"')`,
    );
    expect(got.names).toEqual(want.names);
    expect(got.rows.length).toBe(want.rows.length);
    const differences: string[] = [];
    for (const [r, row] of want.rows.entries()) {
      for (const [c, cell] of row.entries()) {
        const value = got.rows[r]![c]!;
        if (!same(got.types[c]!, value, cell as string | null))
          differences.push(`row ${r + 1} ${got.names[c]}: ${String(value)} (parquet) vs ${String(cell)} (csv)`);
      }
    }
    expect(differences.slice(0, 10)).toEqual([]);
    return { names: got.names, types: got.types, rows: got.rows.length, path: parquet.path };
  }

  it("types each column as CKAN does and holds the CSV export's values, every row of many pages", async () => {
    const { names, types, rows, path } = await compare("resource=edge");
    expect(Object.fromEntries(names.map((n, i) => [n, types[i]]))).toEqual(EDGE_TYPES);
    expect(rows).toBe(EDGE_ROWS);
    // Streamed: the first page is a row group of its own, the rest in more.
    const groups = await db.runAndReadAll(`SELECT count(DISTINCT row_group_id) FROM parquet_metadata('${path}')`);
    expect(Number(groups.getRows()[0]![0])).toBeGreaterThan(1);
  });

  it("keeps every digit of numeric values and CKAN's json and array text byte for byte", async () => {
    const { path } = await download("/export.parquet?resource=edge&filter.id=4");
    const { rows } = await read(
      `SELECT amount, tags, meta, json_extract(meta, '$.big')::VARCHAR, tags::VARCHAR[] FROM read_parquet('${path}')`,
    );
    const [amount, tags, meta, big, list] = rows[0]!;
    expect({ amount, tags, meta, big }).toEqual({
      amount: "12345678901234567890.123456789",
      tags: '["Ñandú","back\\\\slash","NULL"]',
      meta: '{"k": 4, "w": "river", "f": 2.5, "u": "\\u00d1and\\u00fa", "nested": {"a": [1, "x", null, true]}, "big": 12345678901234567890}',
      big: "12345678901234567890",
    });
    // The array is one cast away from DuckDB's own list type.
    expect((list as DuckDBListValue).items).toEqual(["Ñandú", "back\\slash", "NULL"]);
  });

  it("takes fields, sort, filters, limit and header=label as the other formats do", async () => {
    const { names, rows } = await compare(
      "resource=edge&fields=created,id,amount,tags&sort=created desc&filter.category=alpha&limit=300&header=label",
    );
    expect(names).toEqual(["created", "id", "amount", "tags"]);
    expect(rows).toBe(300);
    await compare("resource=edge&q=glacier&fields=id,name");
    await compare("resource=edge&limit=0");
  });

  it("writes numeric columns as doubles when the link asks for them", async () => {
    const { path } = await download("/export.parquet?resource=edge&numeric=double&fields=id,amount&limit=50");
    const csv = await download("/export.csv?resource=edge&fields=id,amount&limit=50");
    const { types, rows } = await read(`SELECT * FROM read_parquet('${path}')`);
    expect(types).toEqual(["INTEGER", "DOUBLE"]);
    const want = (await read(`SELECT amount FROM read_csv('${csv.path}', header = true, all_varchar = true)`)).rows;
    expect(rows.map((r) => r[1])).toEqual(want.map(([text]) => (text === null ? null : Number(text))));
  });

  it("refuses CSV-only parameters and header=0, naming the parameter", async () => {
    for (const [query, parameter] of [
      ["delimiter=%3B", "delimiter"],
      ["bom=1", "bom"],
      ["header=0", "header"],
      ["numeric=decimal", "numeric"],
    ] as const) {
      const response = await fetch(`${worker.url}/export.parquet?resource=edge&${query}`);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { parameter: string } }).error.parameter).toBe(parameter);
    }
  });
});
