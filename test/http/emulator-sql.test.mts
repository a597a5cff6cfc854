// The emulator's datastore_search_sql (a real PostgreSQL: PGlite) held side by side with real
// CKAN 2.12's answers (SQL search on) and 2.10/2.11's (off, their default): same status, content
// type and envelope; errors byte for byte; records with the same keys, order and kinds of values
// (the recorded table had other rows than the emulator's edge table, so values differ).
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SITE_URL } from "../../emulator/error-answers.ts";
import { createEmulator, EMULATOR_RESOURCES, type CkanVersion, type EmulatorOptions } from "../../emulator/index.ts";
import { findResource } from "../../emulator/resources.ts";
import { pyDumps } from "../../emulator/py-json.ts";
import { functionNames, isSingleStatement } from "../../emulator/sql-parse.ts";

interface Recording {
  request: { method: "GET" | "POST"; action: string; body: { sql: string } };
  authorization: boolean;
  status: number;
  content_type: string;
  body: unknown;
  raw_body_text?: string | null;
}

const FOLDER = new URL("../fixtures/ckan-2.12-sql/", import.meta.url);
const RECORDED: Record<string, Recording> = Object.fromEntries(
  readdirSync(FOLDER)
    .filter((file) => file.endsWith(".json"))
    .map((file) => [file.slice(0, -5), JSON.parse(readFileSync(new URL(file, FOLDER), "utf8")) as Recording]),
);

const TOKEN = "test-token";
const RECORDED_SITE = "http://ckan.example";
const RECORDED_TABLE = "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2";
const { edge } = EMULATOR_RESOURCES;

/** The recording as the emulator's site would write it over its edge table. */
function mine(text: string): string {
  // err_syntax's excerpt quotes the first characters of the real table's name, which the recording kept.
  return text
    .replaceAll(RECORDED_SITE, SITE_URL)
    .replaceAll(RECORDED_TABLE, edge)
    .replaceAll('\\"6522...', `\\"${edge.slice(0, 4)}...`);
}

function textOf(recording: Recording): string {
  return recording.raw_body_text ?? pyDumps(recording.body);
}

async function ask(recording: Recording, options: EmulatorOptions, sql = mine(recording.request.body.sql)) {
  const emulator = createEmulator({ token: TOKEN, ...options });
  const headers: Record<string, string> = recording.authorization ? { authorization: TOKEN } : {};
  const url = `${SITE_URL}/api/3/action/${recording.request.action}`;
  const request =
    recording.request.method === "GET"
      ? new Request(`${url}?${new URLSearchParams({ sql })}`, { headers })
      : new Request(url, {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: JSON.stringify({ sql }),
        });
  const response = await emulator.fetch(request);
  return { response, text: await response.text() };
}

/** The shape of an answer: its envelope with every record's values replaced by their JSON kind. */
function shape(text: string): unknown {
  const body = JSON.parse(text) as {
    result: { records: Record<string, unknown>[] } & Record<string, unknown>;
  } & Record<string, unknown>;
  const kind = (value: unknown): string => (value === null ? "null" : Array.isArray(value) ? "array" : typeof value);
  return {
    ...body,
    result: {
      ...body.result,
      records: body.result.records
        .slice(0, 1)
        .map((record) => Object.entries(record).map(([key, value]) => [key, kind(value)])),
    },
  };
}

const ON: EmulatorOptions = { version: "2.12", sql: true };

describe("datastore_search_sql, off as CKAN's default has it since 2.10", () => {
  for (const version of ["2.10", "2.11", "2.12"] as const satisfies readonly CkanVersion[]) {
    it(`${version}: 400 with the bare JSON string of an unknown action`, async () => {
      const recording = RECORDED[`v${version === "2.12" ? "2.11" : version}_sql_off`]!;
      const { response, text } = await ask(recording, { version });
      expect(response.status).toBe(400);
      expect(response.headers.get("content-type")).toBe(recording.content_type);
      expect(text).toBe(textOf(recording));
    });
  }
});

describe("side by side with real CKAN 2.12's datastore_search_sql answers", () => {
  const errors = Object.keys(RECORDED).filter((name) => name.startsWith("err_") && name !== "err_float_nan_500");
  for (const name of errors) {
    it(`${name}: the same status and bytes`, async () => {
      const recording = RECORDED[name]!;
      const { response, text } = await ask(recording, ON);
      expect(response.status).toBe(recording.status);
      expect(response.headers.get("content-type")).toBe(recording.content_type);
      expect(text).toBe(mine(textOf(recording)));
    });
  }

  for (const name of [
    "group_by_get",
    "group_by_month",
    "group_by_null_key",
    "top_n",
    "totals",
    "where_filters_and_q",
    "private_with_token",
    "float_text_cast",
  ]) {
    it(`${name}: the same envelope, fields and kinds of values`, async () => {
      const recording = RECORDED[name]!;
      const { response, text } = await ask(recording, ON);
      expect(response.status).toBe(recording.status);
      expect(response.headers.get("content-type")).toBe(recording.content_type);
      expect(shape(text)).toEqual(shape(mine(textOf(recording))));
    });
  }

  it("private_no_token: 403 without the token", async () => {
    const recording = RECORDED["private_no_token"]!;
    const { response, text } = await ask(recording, ON);
    expect(response.status).toBe(403);
    expect(text).toBe(mine(textOf(recording)));
  });

  it("err_float_nan_500: a NaN float in the result is CKAN's HTML error page", async () => {
    const recording = RECORDED["err_float_nan_500"]!;
    // The edge table holds no NaN ratio: the same float NaN comes from a cast.
    const { response, text } = await ask(recording, ON, `SELECT avg(ratio) * 'NaN'::float8 AS a FROM "${edge}"`);
    expect(response.status).toBe(500);
    expect(response.headers.get("content-type")).toBe(recording.content_type);
    expect(text).toContain("<title>Error [500] - CKAN</title>");
  });
});

describe("the emulator's PostgreSQL holds the tables datastore_search serves", () => {
  interface Answer {
    result: { records: Record<string, unknown>[]; total?: number };
  }
  async function post(
    emulator: ReturnType<typeof createEmulator>,
    action: string,
    body: unknown,
  ): Promise<{ status: number; json: Answer }> {
    const response = await emulator.fetch(
      new Request(`${SITE_URL}/api/3/action/${action}`, { method: "POST", body: JSON.stringify(body) }),
    );
    return { status: response.status, json: (await response.json()) as Answer };
  }

  it("rows_max_truncated: past rows_max rows, rows_max records and records_truncated, in CKAN's key order", async () => {
    const recording = RECORDED["rows_max_truncated"]!;
    // The recording's 40,000 rows over rows_max 32,000; the edge table's 4,321 over a rows_max of 100.
    const { response, text } = await ask(recording, { ...ON, rowsMax: 100 });
    const body = JSON.parse(text) as { result: { records: unknown[] } & Record<string, unknown> };
    const recorded = recording.body as { result: Record<string, unknown> };
    expect(response.status).toBe(200);
    expect(Object.keys(body.result)).toEqual(Object.keys(recorded.result).filter((key) => key !== "records_shown"));
    expect(body.result["records_truncated"]).toBe(true);
    expect(body.result.records).toHaveLength(100);
    expect(body.result.records.slice(0, 5)).toEqual((recorded.result["records"] as unknown[]).slice(0, 5));
    expect(body.result["fields"]).toEqual(recorded.result["fields"]);
  });

  it("every row of the edge table, value for value, as datastore_search serves it", async () => {
    const emulator = createEmulator({ ...ON });
    const sql = await post(emulator, "datastore_search_sql", { sql: `SELECT * FROM "${edge}" ORDER BY _id` });
    const search = await post(emulator, "datastore_search", { resource_id: edge, limit: 32000 });
    expect(sql.status).toBe(200);
    const rows = sql.json.result.records;
    const served = search.json.result.records;
    expect(rows).toHaveLength(served.length);
    // Timestamps: Python's isoformat (microseconds) against datastore_search's 2.12 milliseconds.
    const normal = (record: Record<string, unknown>) =>
      Object.fromEntries(
        Object.entries(record)
          .filter(([key]) => key !== "_full_text")
          .map(([key, value]) => [
            key,
            key === "created" && typeof value === "string" ? value.slice(0, 23).padEnd(23, ".000") : value,
          ]),
      );
    for (let i = 0; i < rows.length; i++) expect(normal(rows[i]!)).toEqual(normal(served[i]!));
  });

  it("the 100,000-row sample table, loaded in batches, sums to what its generated cells sum to", async () => {
    const emulator = createEmulator({ ...ON });
    const table = findResource(EMULATOR_RESOURCES.sample)!.table;
    const [amount, name] = [table.columnIndex("amount")!, table.columnIndex("name")!];
    // Exact decimal arithmetic: every amount as an integer count of 1e-30.
    const scaled = (text: string): bigint => {
      const [whole = "0", fraction = ""] = text.replace("-", "").split(".");
      const units = BigInt(whole + fraction.padEnd(30, "0"));
      return text.startsWith("-") ? -units : units;
    };
    let sum = 0n;
    let [amounts, names] = [0, 0];
    for (let row = 0; row < table.rows; row++) {
      const value = table.cell(amount, row);
      if (typeof value === "string") {
        sum += scaled(value);
        amounts++;
      }
      if (table.cell(name, row) !== null) names++;
    }
    const sql = await post(emulator, "datastore_search_sql", {
      sql: `SELECT count(*) AS n, count(amount) AS amounts, count(name) AS names, sum(amount)::text AS total, max(_id) AS last FROM "${EMULATOR_RESOURCES.sample}"`,
    });
    const { total, ...counts } = sql.json.result.records[0] as { total: string };
    expect(counts).toEqual({ n: table.rows, amounts, names, last: table.rows });
    expect(scaled(total)).toBe(sum);
  });

  it("writes each type as psycopg2 and Python's json do: numerics and integers whole, floats as repr, isoformat, json re-written", async () => {
    const emulator = createEmulator({ ...ON });
    const response = await emulator.fetch(
      new Request(`${SITE_URL}/api/3/action/datastore_search_sql`, {
        method: "POST",
        body: JSON.stringify({
          sql: `SELECT id, amount, ratio, created, day, active, tags, meta, 1234567890123456789::int8 * 5 AS big, amount / 1e12 AS tiny FROM edge WHERE id IN (1, 4, 5, 7) ORDER BY id`,
        }),
      }),
    );
    const text = await response.text();
    expect(text).toContain(
      '{"id": 1, "amount": -82469.50, "ratio": 24044285744692.574, "created": "2020-01-01T00:16:17.500000", "day": "2000-01-01", "active": false, "tags": ["alpha", "beta"], "meta": {"k": 1, "w": "glacier", "f": 1.0, "u": "\\u00d1and\\u00fa", "nested": {"a": [1, "x", null, true]}, "big": 12345678901234567890}, "big": 6172839450617283945, "tiny": -8.2469500000000000E-8}',
    );
    expect(text).toContain('"amount": 12345678901234567890.123456789, "ratio": 0.05991945753341821');
    expect(text).toContain('"amount": -0.50, "ratio": -3.407019206677593e+17, "created": "2020-01-01T01:21:25"');
    expect(text).toContain(
      '"created": "0099-01-02T03:04:05", "day": "2000-01-07", "active": null, "tags": ["quote\'single", "semi;colon", "new\\nline"]',
    );
    expect(text).toContain('{"id": "meta", "type": "nested"}');
  });

  it("q's condition finds the rows datastore_search's q finds, for words", async () => {
    const emulator = createEmulator({ ...ON });
    for (const word of ["glacier", "canyon", "note", "alpha", "zürich"]) {
      const sql = await post(emulator, "datastore_search_sql", {
        sql: `SELECT count(*) AS n FROM edge WHERE _full_text @@ plainto_tsquery('english', '${word}')`,
      });
      const search = await post(emulator, "datastore_search", { resource_id: edge, q: word, limit: 0 });
      expect(sql.json.result.records[0]?.["n"], word).toBe(search.json.result.total);
    }
  });
});

describe("what CKAN reads from a statement before PostgreSQL does (sqlparse's reading)", () => {
  it("counts statements as sqlparse.split does: quotes, comments and a final semicolon are one statement", () => {
    expect(isSingleStatement("SELECT 1")).toBe(true);
    expect(isSingleStatement("SELECT 1;  ")).toBe(true);
    expect(isSingleStatement("SELECT ';' AS semicolon, \"a;b\" FROM t -- ; not a statement")).toBe(true);
    expect(isSingleStatement("SELECT 1; SELECT 2")).toBe(false);
    expect(isSingleStatement("SELECT 1 /* ; */; DROP TABLE t")).toBe(false);
  });

  it("names a call wherever a name meets a parenthesis, FILTER and CAST included, but not keywords, strings or comments", () => {
    expect(functionNames("SELECT count(*) FILTER (WHERE ratio = 'NaN') AS n FROM t")).toEqual(["count", "FILTER"]);
    expect(functionNames("SELECT CAST(amount AS text), amount::numeric(20, 2) FROM t")).toEqual(["CAST", "numeric"]);
    expect(
      functionNames(
        "SELECT date_trunc('month', created), sum (amount) FROM t WHERE category IN ('a') AND EXISTS (SELECT 1)",
      ),
    ).toEqual(["date_trunc", "sum"]);
    expect(functionNames("SELECT 'pg_sleep(1)' AS s, \"pg_sleep\"(1) FROM t -- pg_sleep(2)")).toEqual([]);
    expect(functionNames("SELECT * FROM (SELECT pg_catalog.pg_sleep(1)) AS blah LIMIT 32001 ;")).toEqual(["pg_sleep"]);
  });

  it("refuses system tables, _table_metadata (a view over pg_class) included", async () => {
    const emulator = createEmulator({ ...ON });
    for (const sql of [
      "SELECT * FROM _table_metadata",
      "SELECT table_name FROM information_schema.tables",
      "SELECT relname FROM pg_class",
    ]) {
      const response = await emulator.fetch(
        new Request(`${SITE_URL}/api/3/action/datastore_search_sql`, { method: "POST", body: JSON.stringify({ sql }) }),
      );
      expect(response.status, sql).toBe(403);
      expect(await response.text(), sql).toContain(
        '"message": "Access denied: Not authorized to access system tables"',
      );
    }
  });

  it("a statement with a cast function off the allow-list is refused before it runs", async () => {
    const emulator = createEmulator({ ...ON });
    const response = await emulator.fetch(
      new Request(`${SITE_URL}/api/3/action/datastore_search_sql`, {
        method: "POST",
        body: JSON.stringify({ sql: `SELECT CAST(amount AS text) FROM edge` }),
      }),
    );
    expect(response.status).toBe(403);
    expect(await response.text()).toContain("Not authorized to call function CAST");
  });
});
