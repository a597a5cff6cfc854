import { describe, expect, it } from "vitest";
import { EMULATOR_RESOURCES } from "../emulator/index.ts";
import { harness } from "./harness.ts";

// datastore_search_sql from the emulator the workers specs wire the worker to. PGlite cannot run in
// workerd: the harness gives the emulator the PostgreSQL that Node serves the specs
// (test/http/sql-engine-server.mts), and the emulator does the rest of what CKAN does here.
// test/http/emulator-sql.test.mts holds the answers against real CKAN's.

async function sql(emulator: ReturnType<typeof harness>["emulator"], statement: string): Promise<Response> {
  return emulator.fetch(
    new Request("http://ckan.test/api/3/action/datastore_search_sql", {
      method: "POST",
      body: JSON.stringify({ sql: statement }),
    }),
  );
}

describe("datastore_search_sql in the workers specs' emulator", () => {
  it("is off unless a spec turns it on, as CKAN's default has it", async () => {
    const { emulator } = harness({ emulator: { version: "2.12" }, warm: false });
    const response = await sql(emulator, "SELECT 1");
    expect(response.status).toBe(400);
    expect(await response.text()).toBe('"Bad request - Action name not known: datastore_search_sql"');
  });

  it("answers a GROUP BY with PostgreSQL's groups, in CKAN's shape", async () => {
    const { emulator } = harness({ emulator: { version: "2.12", sql: true }, warm: false });
    const response = await sql(
      emulator,
      `SELECT category, count(*) AS n, sum(amount)::text AS s FROM "${EMULATOR_RESOURCES.edge}" WHERE category IN ('alpha', 'beta') GROUP BY 1 ORDER BY 1`,
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      result: { records: { category: string; n: number; s: string }[]; fields: unknown[] };
    };
    expect(body.result.records.map((record) => record.category)).toEqual(["alpha", "beta"]);
    expect(body.result.records.every((record) => Number.isInteger(record.n) && /^-?\d+\.\d+$/.test(record.s))).toBe(
      true,
    );
    expect(body.result.fields).toEqual([
      { id: "category", type: "text" },
      { id: "n", type: "int8" },
      { id: "s", type: "text" },
    ]);
  });

  it("refuses what CKAN refuses: a function off the allow-list", async () => {
    const { emulator } = harness({ emulator: { version: "2.12", sql: true }, warm: false });
    const response = await sql(emulator, `SELECT pg_sleep(1) FROM "${EMULATOR_RESOURCES.edge}"`);
    expect(response.status).toBe(403);
    expect(await response.text()).toContain("Not authorized to call function pg_sleep");
  });
});
