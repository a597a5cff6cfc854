// A Parquet snapshot written over several Workflow steps (1 MiB steps, 100,000 rows: a few steps, each
// ending its last row group, the footer written by the last), downloaded over HTTP from `wrangler dev`
// and read by DuckDB: every row of the live export, and each row group's statistics and row count as
// its rows say.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMULATOR_RESOURCES } from "../../emulator/index.ts";
import { type EmulatorServer, startEmulatorServer } from "../../emulator/server.ts";
import { getRaw, startWorker, type WorkerProcess } from "./harness.mts";

const ADMIN = "admin-token-for-this-spec";
const JOB = { name: "grants-parquet", resource: "sample", formats: ["parquet"] };

describe("a Parquet snapshot written in steps, read by DuckDB", () => {
  let emulator: EmulatorServer;
  let worker: WorkerProcess;
  let dir: string;
  let db: DuckDBConnection;

  beforeAll(async () => {
    emulator = await startEmulatorServer({ port: 0 });
    dir = await mkdtemp(join(tmpdir(), "datastore-export-snapshot-parquet-"));
    db = await (await DuckDBInstance.create(":memory:")).connect();
    worker = await startWorker({
      vars: {
        CKAN_BASE_URL: `${emulator.url}/data/en`,
        RESOURCES: JSON.stringify(EMULATOR_RESOURCES),
        PAGE_SIZE: "5000",
        CACHE_TTL_SECONDS: "0",
        ADMIN_TOKEN: ADMIN,
        SNAPSHOT_STEP_BYTES: String(2 ** 20),
        SNAPSHOT_JOBS: JSON.stringify([JOB]),
      },
    });
    const run = await fetch(`${worker.url}/snapshots/${JOB.name}/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(run.status, await run.clone().text()).toBe(202);
    for (;;) {
      const listing = (await (await fetch(`${worker.url}/snapshots`)).json()) as {
        jobs: { last_run: { status: string; error?: string } | null }[];
      };
      const lastRun = listing.jobs[0]?.last_run;
      if (lastRun != null) {
        expect(lastRun.status, lastRun.error).toBe("ok");
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }, 180_000);

  afterAll(async () => {
    db?.closeSync();
    await Promise.allSettled([worker?.stop(), emulator?.close(), dir && rm(dir, { recursive: true, force: true })]);
  }, 30_000);

  const rows = async (sql: string) => (await db.runAndReadAll(sql)).getRows();

  it("holds every row of the live export, with each row group's min, max and rows right", async () => {
    const snapshot = join(dir, "snapshot.parquet");
    const live = join(dir, "live.parquet");
    const stored = await getRaw(`${worker.url}/snapshots/${JOB.name}/latest.parquet`);
    expect(stored.status).toBe(200);
    await writeFile(snapshot, stored.body);
    await writeFile(live, (await getRaw(`${worker.url}/export.parquet?resource=sample`)).body);

    expect(await rows(`SELECT count(*) FROM '${snapshot}'`)).toEqual([[100_000n]]);
    for (const [a, b] of [
      [snapshot, live],
      [live, snapshot],
    ])
      expect(await rows(`SELECT count(*) FROM (FROM '${a}' EXCEPT ALL FROM '${b}')`)).toEqual([[0n]]);

    // Steps end row groups where a file written whole goes on: more groups than the live export's.
    const groups = await rows(
      `SELECT row_group_num_rows, stats_min_value, stats_max_value, stats_null_count FROM parquet_metadata('${snapshot}') WHERE path_in_schema = 'id' ORDER BY row_group_id`,
    );
    const liveGroups = await rows(`SELECT count(DISTINCT row_group_id) FROM parquet_metadata('${live}')`);
    expect(groups.length).toBeGreaterThan(Number(liveGroups[0]![0]));
    // Each group's statistics are its rows': ids counted from the file's row numbers.
    let first = 0;
    for (const [count, min, max, nulls] of groups) {
      const n = Number(count);
      const [range] = await rows(
        `SELECT min(id)::VARCHAR, max(id)::VARCHAR, (count(*) - count(id))::BIGINT FROM read_parquet('${snapshot}', file_row_number = true) WHERE file_row_number >= ${first} AND file_row_number < ${first + n}`,
      );
      expect([min, max, nulls]).toEqual(range);
      first += n;
    }
    expect(first).toBe(100_000);
  });
});
