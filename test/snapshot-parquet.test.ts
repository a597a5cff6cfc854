import { parquetMetadata, parquetReadObjects } from "hyparquet";
import { beforeEach, describe, expect, it } from "vitest";
import { beginFormat, type FormatRun, sealFormat, writeStep } from "../src/snapshot/format-steps.ts";
import { snapshotJobs } from "../src/snapshot/jobs.ts";
import { claimJob, type FormatState, type UploadState } from "../src/snapshot/run-record.ts";
import { activeWorker } from "./active-worker.ts";
import { bucket, runsHarness } from "./snapshot-helpers.ts";

// A Parquet snapshot written in bounded steps, as CSV is: each write step writes whole row groups
// and carries only their footer entries to the next; the last writes the footer. Read back by
// hyparquet here (DuckDB reads one in test/http/snapshot-parquet.test.mts).

const STAMP = "20261122T030000Z";

beforeEach(async () => {
  const all = await bucket.list();
  if (all.objects.length > 0) await bucket.delete(all.objects.map((o) => o.key));
});

/** The job's Parquet file written step by step (1 MiB steps); each step's state and the file's bytes. */
async function stepped(name: string, job: Record<string, unknown>) {
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
  let state = await beginFormat(run, stepDeps);
  const steps: FormatState[] = [];
  const parts: UploadState["newParts"] = [];
  while (!state.ended) {
    state = await writeStep(run, state, stepDeps);
    steps.push(state);
    parts.push(...state.upload.newParts);
  }
  const sealed = await sealFormat(run, state, parts, stepDeps);
  const file = await (await bucket.get(sealed.entry!.key))!.arrayBuffer();
  return { h, steps, file };
}

describe("a Parquet snapshot written in steps", () => {
  it("is one file of every row the live export has, each step's rows in whole row groups, the footer last", async () => {
    const { h, steps, file } = await stepped("pq", { resource: "sample" });
    expect(steps.length).toBeGreaterThanOrEqual(3);
    const live = await (await h.get("/export.parquet?resource=sample")).arrayBuffer();
    const [got, want] = await Promise.all([parquetReadObjects({ file }), parquetReadObjects({ file: live })]);
    expect(got.length).toBe(100_000);
    expect(JSON.stringify(got, (_, v) => (typeof v === "bigint" ? String(v) : v))).toBe(
      JSON.stringify(want, (_, v) => (typeof v === "bigint" ? String(v) : v)),
    );

    // Each step ended its last row group: the file's groups add up to each step's rows.
    const groups = parquetMetadata(file).row_groups;
    const ends = groups.map((g) => Number(g.num_rows)).map((n, i, all) => all.slice(0, i).reduce((a, b) => a + b, n));
    expect(ends).toEqual(expect.arrayContaining(steps.map((s) => s.rows)));
    expect(Number(parquetMetadata(file).num_rows)).toBe(100_000);
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

    // What a step carries is its row groups' footer entries: a few hundred bytes each, no rows.
    for (const state of steps.slice(0, -1)) {
      const carried = state.carried as { groups: unknown[] };
      expect(JSON.stringify(carried).length / carried.groups.length).toBeLessThan(800);
    }
    expect(steps.at(-1)!.carried).toBeNull();
  });
});
