import { parquetMetadata, parquetReadObjects } from "hyparquet";
import { beforeEach, describe, expect, it } from "vitest";
import { beginFormat, type FormatRun, sealFormat, writeStep } from "../src/snapshot/format-steps.ts";
import { RunCancelled } from "../src/snapshot/errors.ts";
import { snapshotJobs } from "../src/snapshot/jobs.ts";
import { runKey } from "../src/snapshot/keys.ts";
import { type PausedLog, readPaused } from "../src/snapshot/paused-log.ts";
import { claimJob, type FormatState, type Json, type UploadState } from "../src/snapshot/run-record.ts";
import { activeWorker } from "./active-worker.ts";
import { bucket, keys, runsHarness } from "./snapshot-helpers.ts";

const asJson = (value: unknown): string => JSON.stringify(value, (_, v) => (typeof v === "bigint" ? String(v) : v));

/** The first row that differs, or undefined: a failure names one row, not two whole files (a message that large breaks the test pool). */
function firstDifference(got: unknown[], want: unknown[]): { row: number; got: string; want: string } | undefined {
  for (let row = 0; row < Math.max(got.length, want.length); row++)
    if (asJson(got[row]) !== asJson(want[row])) return { row, got: asJson(got[row]), want: asJson(want[row]) };
  return undefined;
}

// A Parquet snapshot written in bounded steps, as CSV is: each write step writes whole row groups
// and adds their footer entries to a log in R2, its result carrying only the log's reference; the
// last reads them all and writes the footer. Read back by hyparquet here (DuckDB reads one in
// test/http/snapshot-parquet.test.mts).

const STAMP = "20261122T030000Z";
/** Rows enough for five 1 MiB steps. */
const ROWS = 180_000;

beforeEach(async () => {
  const all = await bucket.list();
  if (all.objects.length > 0) await bucket.delete(all.objects.map((o) => o.key));
});

/** The job claimed by a run, as a Workflow's claim step leaves it: the run's format, and the steps' deps. */
async function claimed(name: string, job: Record<string, unknown>) {
  const { h, deps } = runsHarness({ name, formats: ["parquet"], ...job }, undefined, { inline: true });
  const now = new Date().toISOString();
  const instance = `${name}-instance`;
  const record = { instance, job: name, stamp: STAMP, trigger: "cron" as const, started: now, updated: now };
  await claimJob(
    bucket,
    { ...record, current: null, done: [], lastError: null },
    async () => true,
    async () => {},
  );
  const run: FormatRun = {
    job: snapshotJobs(deps.config).jobs[0]!,
    format: "parquet",
    stamp: STAMP,
    started: now,
    instance,
  };
  const stepDeps = { ...deps, upstreamFetch: activeWorker().upstreamFetch };
  return { h, run, stepDeps };
}

/**
 * The job's Parquet file written step by step (1 MiB steps); each step's state and the file's bytes.
 * `retried`: steps run twice from the same state, as after a failure once their writes were done.
 * `change`: a step's state changed before the next step goes on.
 */
async function stepped(
  name: string,
  job: Record<string, unknown>,
  retried: number[] = [],
  change: (state: FormatState) => Promise<FormatState> = async (state) => state,
) {
  const { h, run, stepDeps } = await claimed(name, job);
  let state = await beginFormat(run, stepDeps);
  const steps: FormatState[] = [];
  const parts: UploadState["newParts"] = [];
  while (!state.ended) {
    if (retried.includes(state.step + 1)) await writeStep(run, state, stepDeps);
    state = await change(await writeStep(run, state, stepDeps));
    steps.push(state);
    parts.push(...state.upload.newParts);
  }
  const sealed = await sealFormat(run, state, parts, stepDeps);
  const file = await (await bucket.get(sealed.entry!.key))!.arrayBuffer();
  return { h, steps, file };
}

describe("a Parquet snapshot written in steps", () => {
  it("is one file of every row the live export has, each step's rows in whole row groups, the footer last", async () => {
    const { h, steps, file } = await stepped("pq", { resource: "big", limit: ROWS }, [3]);
    expect(steps.length).toBeGreaterThanOrEqual(5);
    const live = await (await h.get(`/export.parquet?resource=big&limit=${ROWS}`)).arrayBuffer();
    const [got, want] = await Promise.all([parquetReadObjects({ file }), parquetReadObjects({ file: live })]);
    expect(got.length).toBe(ROWS);
    expect(firstDifference(got, want)).toBeUndefined();

    // Each step ended its last row group: the file's groups add up to each step's rows.
    const groups = parquetMetadata(file).row_groups;
    const ends = groups.map((g) => Number(g.num_rows)).map((n, i, all) => all.slice(0, i).reduce((a, b) => a + b, n));
    expect(ends).toEqual(expect.arrayContaining(steps.map((s) => s.rows)));
    // Each group once, though step 3 ran twice: its second run wrote over its first's entries.
    expect(Number(parquetMetadata(file).num_rows)).toBe(ROWS);
    // Statistics as the rows say: each group's first column (the grant number) from its first row to its last.
    let first = 0;
    for (const group of groups) {
      const stats = group.columns[0]!.meta_data!.statistics!;
      expect([stats.min_value, stats.max_value]).toEqual([
        got[first]!["id"],
        got[first + Number(group.num_rows) - 1]!["id"],
      ]);
      first += Number(group.num_rows);
    }

    // A step's result carries the entries' log by reference: the same size after 2 steps as after 4,
    // while the log in R2 grows by each step's groups.
    const carried = steps.map((s) => s.carried as { paused: { tail: { key: string; bytes: number } } });
    expect(JSON.stringify(carried[3]).length).toBe(JSON.stringify(carried[1]).length);
    expect(JSON.stringify(carried[1]).length).toBeLessThan(200);
    expect(carried[3]!.paused.tail.bytes).toBeGreaterThan(carried[1]!.paused.tail.bytes);
    expect(steps.at(-1)!.carried).toBeNull();
  });

  it("goes on with a run begun before the entries' log, whose step result held every entry so far", async () => {
    const limit = 100_000;
    const target = { job: "old", stamp: STAMP, format: "parquet" as const };
    // After its first step, the state as a run begun before the log carried it: the entries themselves.
    const before = async (state: FormatState): Promise<FormatState> => {
      if (state.step !== 1) return state;
      const log = (state.carried as unknown as { paused: PausedLog }).paused;
      const paused = await readPaused(bucket, target, log, { groups: [] });
      await bucket.delete(
        (await bucket.list({ prefix: "old/.staging/" })).objects.map((o) => o.key).filter((k) => k.includes("paused")),
      );
      return { ...state, carried: { groups: paused.flatMap((p) => p["groups"] as Json[]) } };
    };
    const { h, steps, file } = await stepped("old", { resource: "big", limit }, [], before);
    expect(steps.length).toBeGreaterThanOrEqual(3);
    const live = await (await h.get(`/export.parquet?resource=big&limit=${limit}`)).arrayBuffer();
    const [got, want] = await Promise.all([parquetReadObjects({ file }), parquetReadObjects({ file: live })]);
    expect(got.length).toBe(limit);
    expect(firstDifference(got, want)).toBeUndefined();
  });

  it("leaves nothing of a step's entries when the run was cancelled while the step wrote", async () => {
    const { run, stepDeps } = await claimed("gone", { resource: "big", limit: 100_000 });
    const first = await writeStep(run, await beginFormat(run, stepDeps), stepDeps);
    const staged = await keys("gone/.staging/");
    expect(staged).toContainEqual(expect.stringContaining("paused-tail-1"));
    // Cancelled while step 2 writes (the job released; the cancel deletes what was staged before):
    // the step deletes what it staged itself, its entries too, once it finds the job gone.
    await bucket.delete(runKey("gone"));
    await expect(writeStep(run, first, stepDeps)).rejects.toThrow(RunCancelled);
    expect(await keys("gone/.staging/")).toEqual(staged);
  });
});
