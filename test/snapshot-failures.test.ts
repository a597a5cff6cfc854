import { beforeEach, describe, expect, it } from "vitest";
import type { Config } from "../src/config/config.ts";
import { beginFormat, sealFormat, writeStep, type FormatRun, type SnapshotDeps } from "../src/snapshot/format-steps.ts";
import { snapshotJobs } from "../src/snapshot/jobs.ts";
import { datedKey, stamp } from "../src/snapshot/keys.ts";
import { claimJob, type FormatState, type UploadState } from "../src/snapshot/run-record.ts";
import { startScheduled } from "../src/snapshot/runs.ts";
import { instanceId } from "../src/snapshot/workflow.ts";
import { activeWorker } from "./active-worker.ts";
import { bucket, faultyBucket, gate, keys, runs, runsHarness, sha256, stepStart, watched } from "./snapshot-helpers.ts";

// Nothing orphaned, failures visible (README, "Scheduled snapshots"): on every way a run can fail or
// end early, a dated file is in R2 only if the manifest lists it, no staging object or upload is
// left, and a run that failed for good says why, in the manifest's last_run and as an errored
// Workflow instance.

const T0 = Date.UTC(2026, 10, 19, 3, 0, 0);
const T1 = Date.UTC(2026, 10, 20, 3, 0, 0);
const T2 = Date.UTC(2026, 10, 21, 3, 0, 0);
const S1 = stamp(T1);

interface Manifest {
  snapshots: { key: string; stamp: string; sha256: string; bytes: number }[];
  last_run: { status: string; stamp: string; error?: string } | null;
}
const manifestOf = async (job: string): Promise<Manifest> =>
  (await (await bucket.get(`${job}/manifest.json`))!.json()) as Manifest;

/** Every dated file in R2 is one the manifest lists, and nothing of a run is left beside them. */
async function nothingOrphaned(job: string): Promise<void> {
  const listed = (await manifestOf(job)).snapshots.map((s) => s.key);
  const stored = await keys(`${job}/`);
  expect(stored.filter((k) => /\/\d{8}T\d{6}Z\./.test(k)).sort()).toEqual([...listed].sort());
  expect(stored.filter((k) => k.includes("/.staging/") || k.endsWith("/.run.json"))).toEqual([]);
}

/** Runs a job for T1 with the Workflow, to its end: how its instance ended. */
async function workflowRun(job: string, deps: ReturnType<typeof runsHarness>["deps"]) {
  const instance = await watched(job, T1);
  try {
    await startScheduled("0 3 * * *", T1, deps, runs);
    return await instance.ended();
  } finally {
    await instance.dispose();
  }
}

beforeEach(async () => {
  const all = await bucket.list();
  if (all.objects.length > 0) await bucket.delete(all.objects.map((o) => o.key));
});

describe("a snapshot run that fails or ends early leaves nothing behind and says so", () => {
  it("publish fails for good: the sealed file is deleted, the instance errors and last_run says why", async () => {
    // R2 refuses every manifest write that would list the new file (the run's last_run still goes in).
    const broken = faultyBucket({
      put: (key, body) => key === "pub/manifest.json" && typeof body === "string" && body.includes(`pub/${S1}.csv`),
    });
    const { h, deps } = runsHarness({ name: "pub", resource: "sample", limit: 20000 }, undefined, { bucket: broken });
    const ended = await workflowRun("pub", deps);
    expect(ended).toMatchObject({
      status: "errored",
      error: { message: expect.stringMatching(/csv: Internal error while writing the snapshot/) },
    });
    const manifest = await manifestOf("pub");
    expect(manifest.snapshots).toEqual([]);
    expect(manifest.last_run).toMatchObject({
      status: "failed",
      stamp: S1,
      error: expect.stringMatching(/^csv: Internal error while writing the snapshot/),
    });
    expect(ended.error!.message).toContain(manifest.last_run!.error!);
    await nothingOrphaned("pub");
    expect(await bucket.head(datedKey("pub", S1, "csv"))).toBeNull();
    const listing = (await (await h.get("/snapshots")).json()) as { jobs: { last_run: Manifest["last_run"] }[] };
    expect(listing.jobs[0]!.last_run).toEqual(manifest.last_run);
  });

  it("seal fails for good: the upload is aborted, no file appears, the instance errors", async () => {
    const broken = faultyBucket({ complete: () => true });
    const { deps } = runsHarness({ name: "seal", resource: "sample", limit: 60000 }, undefined, { bucket: broken });
    const ended = await workflowRun("seal", deps);
    expect(ended).toMatchObject({ status: "errored", error: { message: expect.stringMatching(/csv: /) } });
    expect((await manifestOf("seal")).last_run).toMatchObject({
      status: "failed",
      error: expect.stringMatching(/^csv: /),
    });
    await nothingOrphaned("seal");
    expect(await keys("seal/")).toEqual(["seal/manifest.json"]);
  });

  it("publish and seal failing inline (the cron without the Workflow): the same files left, the same last_run", async () => {
    const broken = faultyBucket({
      put: (key, body) => key === "inl/manifest.json" && typeof body === "string" && body.includes(`inl/${S1}.csv`),
    });
    const { h } = runsHarness({ name: "inl", resource: "sample", limit: 20000 }, undefined, {
      bucket: broken,
      inline: true,
    });
    const [result] = await h.scheduled("0 3 * * *", T1);
    expect(result).toMatchObject({
      status: "failed",
      error: expect.stringMatching(/^csv: Internal error while writing the snapshot/),
    });
    expect((await manifestOf("inl")).last_run).toMatchObject({ status: "failed", error: result!.error });
    await nothingOrphaned("inl");
    expect(await keys("inl/")).toEqual(["inl/manifest.json"]);
  });

  /**
   * A run whose instance ended mid-step (terminated from the dashboard, or lost): modelled by the
   * steps themselves run for an instance the Workflow does not know, the last of them cut off
   * inside a CKAN request. The next run finds the job held by a run that is gone and settles it.
   */
  async function deadRun(
    name: string,
    config: Config,
    hold: ReturnType<typeof gate> | undefined,
    until: (state: FormatState) => boolean,
  ) {
    // The harness made last: its emulator and faults.
    const deps: SnapshotDeps = { bucket, config, upstreamFetch: activeWorker().upstreamFetch, redact: (t) => t };
    const job = snapshotJobs(config).jobs[0]!;
    // An instance that has ended, as a terminated one has: a run of the day before, done. (Its
    // introspector stays until the spec's end: disposing it would make the instance unknown.)
    const before = await watched(name, T0);
    await startScheduled("0 3 * * *", T0, { config, redact: deps.redact }, runs);
    expect(await before.ended()).toMatchObject({ status: "complete" });
    const instance = instanceId(name, stamp(T0));
    const now = new Date().toISOString();
    await claimJob(
      bucket,
      {
        instance,
        job: name,
        stamp: S1,
        trigger: "cron",
        started: now,
        updated: now,
        current: null,
        done: [],
        lastError: null,
      },
      async () => true,
      async () => {},
    );
    const run: FormatRun = { job, format: "csv", stamp: S1, started: now, instance };
    let state = await beginFormat(run, deps);
    const parts: UploadState["newParts"] = [];
    while (!until(state)) {
      state = await writeStep(run, state, deps);
      parts.push(...state.upload.newParts);
    }
    return { run, deps, state, parts, before, cutOff: hold === undefined ? undefined : writeStep(run, state, deps) };
  }

  it("an instance that ended mid-step: the next run aborts its upload, deletes what it carried, and says it ended", async () => {
    const hold = gate();
    let armed = false;
    const { deps } = runsHarness({ name: "lost", resource: "sample", limit: 60000 }, async (_, body) => {
      if (armed && stepStart(body, 40000)) {
        armed = false;
        hold.reached();
        await hold.opened();
      }
      return undefined;
    });
    // Steps until a part is up and bytes are carried, then one more caught inside CKAN's answer.
    const dead = await deadRun(
      "lost",
      deps.config,
      hold,
      (s) => s.upload.parts > 0 && s.upload.carry !== null && s.rows >= 35000,
    );
    armed = true;
    const cutOff = dead.cutOff!.then(
      () => "finished",
      (error: Error) => error.name,
    );
    await hold.arrived();
    expect(await keys("lost/.staging/")).not.toEqual([]);

    const next = await watched("lost", T2);
    try {
      await startScheduled("0 3 * * *", T2, deps, runs);
      expect(await next.ended()).toMatchObject({
        status: "complete",
        output: { status: "ok", written: [{ format: "csv", rows: 60000 }] },
      });
    } finally {
      await next.dispose();
      await dead.before.dispose();
    }
    // The cut-off step wakes up late: it no longer holds the job, so what it writes does not stay.
    hold.open();
    expect(await cutOff).not.toBe("finished");
    await nothingOrphaned("lost");
    expect(await keys("lost/")).toEqual([
      "lost/20261119T030000Z.csv",
      "lost/20261121T030000Z.csv",
      "lost/datapackage.json",
      "lost/manifest.json",
    ]);
    // The dead run's upload was aborted: its parts can never be completed into a file.
    await expect(
      bucket.resumeMultipartUpload(dead.state.upload.key, dead.state.upload.id).complete(dead.parts),
    ).rejects.toThrow();
    expect((await manifestOf("lost")).last_run).toMatchObject({ status: "ok", stamp: "20261121T030000Z" });
  });

  it("an instance that ended right after sealing: the next run lists its whole file", async () => {
    const { deps } = runsHarness({ name: "sealed", resource: "sample", limit: 20000 });
    const dead = await deadRun("sealed", deps.config, undefined, (s) => s.ended);
    const sealed = await sealFormat(dead.run, dead.state, dead.parts, dead.deps);
    expect(await bucket.head(datedKey("sealed", S1, "csv"))).not.toBeNull();
    expect((await manifestOf("sealed")).snapshots.map((s) => s.stamp)).toEqual(["20261119T030000Z"]);

    const next = await watched("sealed", T2);
    try {
      await startScheduled("0 3 * * *", T2, deps, runs);
      expect(await next.ended()).toMatchObject({ status: "complete", output: { status: "ok" } });
    } finally {
      await next.dispose();
      await dead.before.dispose();
    }
    const manifest = await manifestOf("sealed");
    expect(manifest.snapshots.map((s) => s.stamp)).toEqual(["20261121T030000Z", S1, "20261119T030000Z"]);
    const file = await (await bucket.get(datedKey("sealed", S1, "csv")))!.arrayBuffer();
    expect(manifest.snapshots[1]).toMatchObject({ sha256: await sha256(file), bytes: file.byteLength });
    expect(manifest.snapshots[1]!.sha256).toBe(sealed.entry!.sha256);
    await nothingOrphaned("sealed");
  });
});
