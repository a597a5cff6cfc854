// Gzipped CSV and XLSX snapshots written in several bounded steps (`SNAPSHOT_STEP_BYTES` 1 MiB, each
// step a fresh deflater going on from the carried CRC and sizes), read back by readers that share no
// code with the worker: gzip and DuckDB for the .csv.gz, Info-ZIP's unzip and LibreOffice for the
// workbook. The worker runs in `wrangler dev` over the CKAN emulator, the run as a Workflow instance.
import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import Papa from "papaparse";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMULATOR_RESOURCES } from "../../emulator/index.ts";
import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";
import { convertToCsv, findOffice, NO_OFFICE } from "./office.mts";
import { getRaw, startWorker, type WorkerProcess } from "./harness.mts";

const ADMIN = "admin-token-for-this-spec";
const ROWS = 30_000;
const JOB = { name: "stepped", resource: "sample", limit: ROWS, formats: ["csv", "xlsx"], compress: "gzip" };
const STEP_BYTES = 1024 * 1024;
const noOffice = findOffice() === undefined && process.env.CI !== "true";

interface Listed {
  rows: number;
  bytes: number;
  encoding?: string;
  decoded_bytes?: number;
}

describe("gzip and XLSX snapshots written in several steps, read by independent readers", () => {
  let emulator: EmulatorServer;
  let worker: WorkerProcess;
  let latest: Record<string, Listed>;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "datastore-export-steps-"));
    emulator = await startEmulatorServer({ port: 0 });
    worker = await startWorker({
      vars: {
        CKAN_BASE_URL: `${emulator.url}/data/en`,
        RESOURCES: JSON.stringify(EMULATOR_RESOURCES),
        PAGE_SIZE: "1000",
        CACHE_TTL_SECONDS: "0",
        ADMIN_TOKEN: ADMIN,
        SNAPSHOT_STEP_BYTES: String(STEP_BYTES),
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
        jobs: { latest: Record<string, Listed>; last_run: { status: string; error?: string } | null }[];
      };
      const [job] = listing.jobs;
      if (job?.last_run != null) {
        expect(job.last_run.status, job.last_run.error).toBe("ok");
        latest = job.latest;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }, 240_000);

  afterAll(async () => {
    await Promise.allSettled([worker?.stop(), emulator?.close(), rm(dir, { recursive: true, force: true })]);
  }, 30_000);

  const live = async (format: string): Promise<Buffer> =>
    (await getRaw(`${worker.url}/export.${format}?resource=sample&limit=${ROWS}`, { timeoutMs: 60_000 })).body;

  it("a gzipped CSV of several steps: gzip -t passes, gunzip gives the live export, DuckDB reads every row", async () => {
    const res = await getRaw(`${worker.url}/snapshots/${JOB.name}/latest.csv`, {
      headers: { "accept-encoding": "gzip" },
    });
    expect(res.headers["content-encoding"]).toBe("gzip");
    // More than three steps' worth of CSV: the file was written by several deflaters.
    expect(latest.csv!.decoded_bytes).toBeGreaterThan(3 * STEP_BYTES);
    expect(spawnSync("gzip", ["-t"], { input: res.body }).status).toBe(0);
    const gunzipped = spawnSync("gzip", ["-dc"], { input: res.body, maxBuffer: 2 ** 28 });
    expect(gunzipped.status).toBe(0);
    expect(gunzipped.stdout.equals(await live("csv"))).toBe(true);
    const file = join(dir, "latest.csv.gz");
    await writeFile(file, res.body);
    const db = await (await DuckDBInstance.create(":memory:")).connect();
    const counted = await db.runAndReadAll(`SELECT count(*) FROM read_csv('${file}', header=true, all_varchar=true)`);
    expect(counted.getRows()[0]!.map(String)).toEqual([String(ROWS)]);
    db.closeSync();
  });

  it("an XLSX of several steps: the live export's bytes, whole for unzip, every row in LibreOffice", async () => {
    const res = await getRaw(`${worker.url}/snapshots/${JOB.name}/latest.xlsx`, { timeoutMs: 60_000 });
    expect(res.status).toBe(200);
    expect(latest.xlsx!.rows).toBe(ROWS);
    // Sheet XML of more than three steps (the stored workbook is its deflated form).
    expect(latest.xlsx!.bytes).toBeGreaterThan(STEP_BYTES / 2);
    expect(res.body.equals(await live("xlsx"))).toBe(true);
    const file = join(dir, "latest.xlsx");
    await writeFile(file, res.body);
    const tested = spawnSync("unzip", ["-t", file], { encoding: "utf8" });
    expect(tested.status, tested.stdout).toBe(0);
    const sheet = spawnSync("unzip", ["-p", file, "xl/worksheets/sheet1.xml"], { maxBuffer: 2 ** 28 });
    expect(sheet.stdout.length).toBeGreaterThan(3 * STEP_BYTES);
    if (noOffice) {
      process.stderr.write(`test/http: ${NO_OFFICE}\n`);
      return;
    }
    const office = Papa.parse<string[]>((await convertToCsv("latest.xlsx", res.body)).trimEnd(), {
      newline: "\n",
    }).data;
    const csv = Papa.parse<string[]>((await live("csv")).toString("utf8").trimEnd(), { newline: "\r\n" }).data;
    expect(office).toHaveLength(ROWS + 1);
    expect(office[0]).toEqual(csv[0]);
    // The first column of every row, in order: no row lost or doubled where a step ended.
    expect(office.map((row) => row[0])).toEqual(csv.map((row) => row[0]));
  }, 180_000);
});
