import { beforeEach, describe, expect, it } from "vitest";
import { runningRun, startScheduled, type RunView } from "../src/snapshot/runs.ts";
import { listSnapshots } from "../src/snapshot/serve.ts";
import { type harness, TOKEN } from "./harness.ts";
import {
  ADMIN,
  afterId,
  bucket,
  gate,
  keys,
  MiB,
  runs,
  runsHarness,
  settled,
  sha256,
  stepStart,
  watched,
} from "./snapshot-helpers.ts";

// Snapshot runs as Workflow instances (README, "Scheduled snapshots"): the cron trigger starts one
// instance per job and scheduled time, each step writes a few R2 parts from where the last stopped.

const T1 = Date.UTC(2026, 10, 20, 3, 0, 0);
const T2 = Date.UTC(2026, 10, 21, 3, 0, 0);

async function live(h: ReturnType<typeof harness>, path: string): Promise<string> {
  const response = await h.get(path);
  expect(response.status).toBe(200);
  return sha256(await response.arrayBuffer());
}

beforeEach(async () => {
  const all = await bucket.list();
  if (all.objects.length > 0) await bucket.delete(all.objects.map((o) => o.key));
});

describe("snapshot runs as Workflows", () => {
  it("survives a CKAN outage on a middle step, shows its progress while running, and writes the live export's bytes", async () => {
    let failures = 0;
    let held = false;
    const hold = gate();
    const { h, deps } = runsHarness(
      { name: "nightly", resource: "sample", limit: 60000, cron: "0 3 * * *" },
      async (_, body) => {
        // CKAN goes down a few steps in, for four requests: four failed attempts of that step,
        // retried by the Workflow.
        if (stepStart(body, 20000) && failures < 4) {
          failures++;
          return new Response("Service Unavailable", { status: 503 });
        }
        if (stepStart(body, 40000) && !held) {
          held = true;
          hold.reached();
          await hold.opened();
        }
        return undefined;
      },
    );
    const instance = await watched("nightly", T1);
    try {
      expect(await startScheduled("0 3 * * *", T1, deps, runs)).toEqual([
        { job: "nightly", stamp: "20261120T030000Z", instance: "nightly-20261120T030000Z", started: true },
      ]);

      // Caught mid-run, after the outage: its progress, and the outage as its last error.
      await hold.arrived();
      const progress = (await runningRun("nightly", bucket, runs))!;
      expect(progress).toMatchObject({
        instance: "nightly-20261120T030000Z",
        job: "nightly",
        trigger: "cron",
        format: "csv",
        status: "running",
      });
      expect(progress.step).toBeGreaterThanOrEqual(2);
      expect(progress.rows).toBeGreaterThanOrEqual(20000);
      expect(progress.bytes).toBeGreaterThan(2 * MiB);
      // The outage is over by now, and the run says what it went through.
      expect(progress.last_error).toMatch(/^csv step [3-9], attempt 4: .*503/);
      expect(JSON.stringify(progress)).not.toContain(TOKEN);
      const listing = await listSnapshots(deps.config, bucket, async (path) => path, runs);
      expect(listing.jobs).toMatchObject([
        { name: "nightly", running: { instance: "nightly-20261120T030000Z", format: "csv", rows: progress.rows } },
      ]);
      // A second trigger of the same scheduled time starts nothing.
      expect(await startScheduled("0 3 * * *", T1, deps, runs)).toMatchObject([
        { instance: "nightly-20261120T030000Z", started: false },
      ]);
      expect(JSON.stringify(progress)).not.toContain(TOKEN);
      hold.open();

      expect(await instance.ended()).toMatchObject({
        status: "complete",
        output: { job: "nightly", status: "ok", written: [{ format: "csv", rows: 60000 }] },
      });
      // Triggered again once it is done (while the Workflow keeps the instance): nothing more is written.
      const uploaded = (await bucket.head("nightly/20261120T030000Z.csv"))!.uploaded.getTime();
      expect(await startScheduled("0 3 * * *", T1, deps, runs)).toMatchObject([{ started: false }]);
      expect((await bucket.head("nightly/20261120T030000Z.csv"))!.uploaded.getTime()).toBe(uploaded);
    } finally {
      await settled(instance, hold);
    }
    expect(failures).toBe(4);
    expect(await keys("nightly/")).toEqual([
      "nightly/20261120T030000Z.csv",
      "nightly/datapackage.json",
      "nightly/manifest.json",
    ]);
    const dated = (await bucket.get("nightly/20261120T030000Z.csv"))!;
    const bytes = await dated.arrayBuffer();
    expect(bytes.byteLength).toBeGreaterThan(5 * MiB);
    const hash = await sha256(bytes);
    expect(hash).toBe(await live(h, "/export.csv?resource=sample&limit=60000"));
    expect(await live(h, "/snapshots/nightly/latest.csv")).toBe(hash);
    const manifest = (await (await bucket.get("nightly/manifest.json"))!.json()) as {
      snapshots: { sha256: string; rows: number }[];
      last_run: { status: string };
    };
    expect(manifest.snapshots).toMatchObject([{ sha256: hash, rows: 60000 }]);
    expect(manifest.last_run.status).toBe("ok");
  });

  it("writes every format's bytes as the live export writes them, in steps by _id and by offset", async () => {
    const formats = ["csv", "tsv", "json", "ndjson", "xlsx"];
    const { h, deps } = runsHarness({ name: "every", resource: "sample", limit: 30000, formats });
    const instance = await watched("every", T1);
    try {
      await startScheduled("0 3 * * *", T1, deps, runs);
      expect(await instance.ended()).toMatchObject({ status: "complete", output: { status: "ok" } });
    } finally {
      await instance.dispose();
    }
    for (const format of formats) {
      const snapshot = await sha256(await (await bucket.get(`every/20261120T030000Z.${format}`))!.arrayBuffer());
      expect(snapshot, format).toBe(await live(h, `/export.${format}?resource=sample&limit=30000`));
    }

    // A sorted export pages by offset: its steps go on at the offset where the last stopped.
    const sorted = runsHarness({
      name: "sorted",
      resource: "sample",
      sort: "name desc",
      formats: ["json", "csv"],
      q: "alpha",
    });
    const again = await watched("sorted", T2);
    try {
      await startScheduled("0 3 * * *", T2, sorted.deps, runs);
      expect(await again.ended()).toMatchObject({
        status: "complete",
        output: { status: "ok", written: [{ format: "json" }, { format: "csv" }] },
      });
    } finally {
      await again.dispose();
    }
    const offsets = sorted.h.calls.filter((c) => typeof c.body.offset === "number" && (c.body.offset as number) > 0);
    expect(offsets.length).toBeGreaterThan(1);
    for (const format of ["json", "csv"]) {
      const snapshot = await sha256(await (await bucket.get(`sorted/20261121T030000Z.${format}`))!.arrayBuffer());
      expect(snapshot, format).toBe(await live(sorted.h, `/export.${format}?resource=sample&sort=name%20desc&q=alpha`));
    }
  });

  it("aborts its upload and records why when CKAN stays down past every retry; latest stays", async () => {
    let down = false;
    const { h, deps } = runsHarness({ name: "doomed", resource: "sample", limit: 60000 }, (_, body) =>
      down && afterId(body) >= 30000 ? new Response("Bad Gateway", { status: 502 }) : undefined,
    );
    const first = await watched("doomed", T1);
    try {
      await startScheduled("0 3 * * *", T1, deps, runs);
      expect(await first.ended()).toMatchObject({ status: "complete" });
    } finally {
      await first.dispose();
    }
    const latest = await live(h, "/snapshots/doomed/latest.csv");

    down = true;
    const second = await watched("doomed", T2);
    try {
      await startScheduled("0 3 * * *", T2, deps, runs);
      // Failed for good: the instance ends as errored, with the reason the manifest gives.
      expect(await second.ended()).toMatchObject({
        status: "errored",
        error: { message: expect.stringMatching(/^(SnapshotRunFailed: )?csv: .*502/) },
      });
    } finally {
      await second.dispose();
    }
    expect(await keys("doomed/")).toEqual([
      "doomed/20261120T030000Z.csv",
      "doomed/datapackage.json",
      "doomed/manifest.json",
    ]);
    expect(await live(h, "/snapshots/doomed/latest.csv")).toBe(latest);
    const manifest = (await (await bucket.get("doomed/manifest.json"))!.json()) as {
      snapshots: unknown[];
      last_run: { status: string; stamp: string; error: string };
    };
    expect(manifest.snapshots).toHaveLength(1);
    expect(manifest.last_run).toMatchObject({
      status: "failed",
      stamp: "20261121T030000Z",
      error: expect.stringMatching(/502/),
    });
  });

  it("never lets two runs of a job write at once, and an operator can see and cancel the one going, over HTTP", async () => {
    const hold = gate();
    let held = false;
    const { h, deps } = runsHarness(
      { name: "slow", resource: "sample", limit: 60000, cron: "0 3 * * *" },
      async (_, body) => {
        if (!held && stepStart(body, 20000)) {
          held = true;
          hold.reached();
          await hold.opened();
        }
        return undefined;
      },
    );
    const operator = (method: string) => ({ method, headers: { authorization: `Bearer ${ADMIN}` } });
    const first = await watched("slow", T1);
    const second = await watched("slow", T2);
    try {
      // The cron trigger, through the worker: it starts a Workflow instance and returns.
      await h.scheduled("0 3 * * *", T1);
      await hold.arrived();
      // Right after the trigger, /snapshots and the run's own route show it going.
      const listed = (await (await h.get("/snapshots")).json()) as { jobs: { name: string; running?: RunView }[] };
      expect(listed.jobs.find((j) => j.name === "slow")?.running).toMatchObject({ instance: "slow-20261120T030000Z" });
      const shown = await h.get("/snapshots/slow/run", operator("GET"));
      expect(shown.status).toBe(200);
      expect(((await shown.json()) as RunView).instance).toBe("slow-20261120T030000Z");
      // An operator's start and the next scheduled time both find the job taken.
      const refused = await h.get("/snapshots/slow/run", operator("POST"));
      expect(refused.status).toBe(409);
      expect(((await refused.json()) as { running: RunView }).running.instance).toBe("slow-20261120T030000Z");
      await startScheduled("0 3 * * *", T2, deps, runs);
      expect(await second.ended()).toMatchObject({
        status: "complete",
        output: {
          status: "skipped",
          error: expect.stringContaining("run slow-20261120T030000Z of this job is still going"),
          written: [],
        },
      });

      expect((await h.get("/snapshots/slow/run", { method: "DELETE" })).status).toBe(401);
      const cancelled = await h.get("/snapshots/slow/run", operator("DELETE"));
      expect(await cancelled.json()).toEqual({
        cancelled: "slow-20261120T030000Z",
        job: "slow",
        stamp: "20261120T030000Z",
      });
      // The job is free at once; the run itself stops at the end of the step it was in, writing nothing more.
      expect(await runningRun("slow", bucket, runs)).toBeUndefined();
      hold.open();
      expect(await first.ended()).toMatchObject({ status: "complete", output: { status: "cancelled", written: [] } });
    } finally {
      await settled(first, hold);
      await settled(second);
    }
    expect(await keys("slow/")).toEqual(["slow/manifest.json"]);
    const manifest = (await (await bucket.get("slow/manifest.json"))!.json()) as {
      snapshots: unknown[];
      last_run: { status: string; error: string };
    };
    expect(manifest).toMatchObject({
      snapshots: [],
      last_run: { status: "failed", error: "cancelled by an operator" },
    });
    expect(await runningRun("slow", bucket, runs)).toBeUndefined();
    expect((await h.get("/snapshots/slow/run", operator("GET"))).status).toBe(404);
  });
});

/**
 * The same run procedure with the inline runner: the cron without SNAPSHOT_RUNS runs every step in
 * its own invocation, one try each (CKAN requests keep their own retries).
 */
describe("snapshot runs inline, the cron invocation itself", () => {
  it("writes every format's bytes as the live export writes them, in steps by _id and by offset", async () => {
    const formats = ["csv", "tsv", "json", "ndjson", "xlsx"];
    const { h } = runsHarness({ name: "every", resource: "sample", limit: 30000, formats }, undefined, {
      inline: true,
    });
    const [result] = await h.scheduled("0 3 * * *", T1);
    expect(result).toMatchObject({ status: "ok", written: formats.map((format) => ({ format, rows: 30000 })) });
    for (const format of formats) {
      const snapshot = await sha256(await (await bucket.get(`every/20261120T030000Z.${format}`))!.arrayBuffer());
      expect(snapshot, format).toBe(await live(h, `/export.${format}?resource=sample&limit=30000`));
      expect(await live(h, `/snapshots/every/latest.${format}`), format).toBe(snapshot);
    }

    const sorted = runsHarness(
      { name: "sorted", resource: "sample", sort: "name desc", formats: ["json", "csv"], q: "alpha" },
      undefined,
      { inline: true },
    );
    expect(await sorted.h.scheduled("0 3 * * *", T2)).toMatchObject([
      { status: "ok", written: [{ format: "json" }, { format: "csv" }] },
    ]);
    expect(
      sorted.h.calls.filter((c) => typeof c.body.offset === "number" && (c.body.offset as number) > 0).length,
    ).toBeGreaterThan(1);
    for (const format of ["json", "csv"]) {
      const snapshot = await sha256(await (await bucket.get(`sorted/20261121T030000Z.${format}`))!.arrayBuffer());
      expect(snapshot, format).toBe(await live(sorted.h, `/export.${format}?resource=sample&sort=name%20desc&q=alpha`));
    }
  });

  it("rides out a short CKAN outage on its requests' own retries, and a second trigger of the same time writes nothing", async () => {
    let failures = 0;
    const { h } = runsHarness(
      { name: "nightly", resource: "sample", limit: 60000 },
      (_, body) => {
        if (stepStart(body, 20000) && failures < 2) {
          failures++;
          return new Response("Service Unavailable", { status: 503 });
        }
        return undefined;
      },
      { inline: true, env: { UPSTREAM_RETRIES: "3", UPSTREAM_RETRY_BASE_MS: "1" } },
    );
    expect(await h.scheduled("0 3 * * *", T1)).toMatchObject([
      { status: "ok", written: [{ format: "csv", rows: 60000 }] },
    ]);
    expect(failures).toBe(2);
    const etag = (await bucket.head("nightly/20261120T030000Z.csv"))!.etag;
    expect(await h.scheduled("0 3 * * *", T1)).toMatchObject([{ status: "ok", written: [], skipped: ["csv"] }]);
    expect((await bucket.head("nightly/20261120T030000Z.csv"))!.etag).toBe(etag);
    expect(await keys("nightly/")).toEqual([
      "nightly/20261120T030000Z.csv",
      "nightly/datapackage.json",
      "nightly/manifest.json",
    ]);
  });

  it("fails the run when CKAN stays down, aborting its upload; latest stays and last_run says why", async () => {
    let down = false;
    const { h } = runsHarness(
      { name: "doomed", resource: "sample", limit: 60000 },
      (_, body) => (down && afterId(body) >= 30000 ? new Response("Bad Gateway", { status: 502 }) : undefined),
      { inline: true },
    );
    await h.scheduled("0 3 * * *", T1);
    const latest = await live(h, "/snapshots/doomed/latest.csv");
    down = true;
    expect(await h.scheduled("0 3 * * *", T2)).toMatchObject([
      { status: "failed", error: expect.stringMatching(/^csv: .*502/) },
    ]);
    expect(await keys("doomed/")).toEqual([
      "doomed/20261120T030000Z.csv",
      "doomed/datapackage.json",
      "doomed/manifest.json",
    ]);
    expect(await live(h, "/snapshots/doomed/latest.csv")).toBe(latest);
    const manifest = (await (await bucket.get("doomed/manifest.json"))!.json()) as {
      snapshots: unknown[];
      last_run: { status: string; stamp: string; error: string };
    };
    expect(manifest.snapshots).toHaveLength(1);
    expect(manifest.last_run).toMatchObject({
      status: "failed",
      stamp: "20261121T030000Z",
      error: expect.stringMatching(/502/),
    });
  });

  it("has no run to show or cancel: without the Workflow a run lasts only the invocation that starts it", async () => {
    const { h } = runsHarness({ name: "slow", resource: "sample", limit: 10 }, undefined, { inline: true });
    const operator = (method: string) => ({ method, headers: { authorization: `Bearer ${ADMIN}` } });
    expect((await h.get("/snapshots/slow/run", operator("GET"))).status).toBe(404);
    expect((await h.get("/snapshots/slow/run", operator("DELETE"))).status).toBe(404);
    const ran = await h.get("/snapshots/slow/run", operator("POST"));
    expect(ran.status).toBe(200);
    expect(await ran.json()).toMatchObject({ job: "slow", status: "ok", written: [{ format: "csv", rows: 10 }] });
  });
});
