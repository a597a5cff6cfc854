// The emulator's datastore_search_sql (a real PostgreSQL: PGlite) held side by side with real
// CKAN 2.12's answers (SQL search on) and 2.10/2.11's (off, their default): same status, content
// type and envelope; errors byte for byte; records with the same keys, order and kinds of values
// (the recorded table had other rows than the emulator's edge table, so values differ).
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SITE_URL } from "../../emulator/error-answers.ts";
import { createEmulator, EMULATOR_RESOURCES, type CkanVersion, type EmulatorOptions } from "../../emulator/index.ts";
import { pyDumps } from "../../emulator/py-json.ts";

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
  return text.replaceAll(RECORDED_SITE, SITE_URL).replaceAll(RECORDED_TABLE, edge).replaceAll('\\"6522...', `\\"${edge.slice(0, 4)}...`);
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
      : new Request(url, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify({ sql }) });
  const response = await emulator.fetch(request);
  return { response, text: await response.text() };
}

/** The shape of an answer: its envelope with every record's values replaced by their JSON kind. */
function shape(text: string): unknown {
  const body = JSON.parse(text) as { result: { records: Record<string, unknown>[] } & Record<string, unknown> } & Record<string, unknown>;
  const kind = (value: unknown): string => (value === null ? "null" : Array.isArray(value) ? "array" : typeof value);
  return {
    ...body,
    result: { ...body.result, records: body.result.records.slice(0, 1).map((record) => Object.entries(record).map(([key, value]) => [key, kind(value)])) },
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

  for (const name of ["group_by_get", "group_by_month", "group_by_null_key", "top_n", "totals", "where_filters_and_q", "private_with_token", "float_text_cast"]) {
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
