// A run's steps each read the job from SNAPSHOT_JOBS as then deployed: a deploy that changes what the
// job writes while one of its files is being written (its query, gzip or not) would join two exports
// into one file. The run stops for good instead (JobChanged), and nothing is published.
import { beforeEach, describe, expect, it } from "vitest";
import { configFor } from "../src/config/config.ts";
import { beginFormat, type FormatRun, writeStep } from "../src/snapshot/format-steps.ts";
import { snapshotJobs } from "../src/snapshot/jobs.ts";
import { claimJob } from "../src/snapshot/run-record.ts";
import { activeWorker } from "./active-worker.ts";
import { bucket, jobs, runsHarness } from "./snapshot-helpers.ts";

const STAMP = "20261122T030000Z";

beforeEach(async () => {
  const all = await bucket.list();
  if (all.objects.length > 0) await bucket.delete(all.objects.map((o) => o.key));
});

/** Two write steps of the job as it was, then one after a deploy changed it: what that step does. */
async function stepAfterDeploy(before: Record<string, unknown>, after: Record<string, unknown>): Promise<unknown> {
  const { h, deps } = runsHarness(before, undefined, { inline: true, env: { PAGE_SIZE: "1000" } });
  const now = new Date().toISOString();
  const instance = "x-instance";
  const record = { instance, job: "x", stamp: STAMP, trigger: "cron" as const, started: now, updated: now };
  await claimJob(
    bucket,
    { ...record, current: null, done: [], lastError: null },
    async () => true,
    async () => {},
  );
  const upstreamFetch = activeWorker().upstreamFetch;
  const was = { ...deps, config: { ...deps.config, snapshotStepBytes: 1 }, upstreamFetch };
  const now2 = { ...deps, config: { ...configFor({ ...h.env, ...jobs(after) }), snapshotStepBytes: 1 }, upstreamFetch };
  const run = (config: typeof was.config): FormatRun => ({
    job: snapshotJobs(config).jobs[0]!,
    format: "csv",
    stamp: STAMP,
    started: now,
    instance,
  });
  let state = await beginFormat(run(was.config), was);
  for (let i = 0; i < 2; i++) state = await writeStep(run(was.config), state, was);
  return writeStep(run(now2.config), state, now2).then(
    () => "went on",
    (error: unknown) => error,
  );
}

describe("a deploy that changes a job while its run writes a file", () => {
  const base = { name: "x", resource: "sample", limit: 3000, formats: ["csv"] };
  for (const [what, after] of [
    ["gzip turned on", { ...base, compress: "gzip" }],
    ["its sort changed", { ...base, sort: "name desc" }],
    ["its filters changed", { ...base, filters: { category: "alpha" } }],
  ] as const) {
    it(`stops the run for good when ${what}`, async () => {
      const outcome = await stepAfterDeploy(base, after);
      expect(outcome).toBeInstanceOf(Error);
      expect((outcome as Error).name).toBe("JobChanged");
      expect((outcome as Error).message).toMatch(/definition changed .*SNAPSHOT_JOBS/);
    });
  }

  it("goes on when the deploy left the job as it was", async () => {
    expect(await stepAfterDeploy(base, { ...base })).toBe("went on");
  });
});
