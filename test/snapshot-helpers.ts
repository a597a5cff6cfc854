import { introspectWorkflowInstance } from "cloudflare:test";
import { env as testEnv } from "cloudflare:workers";
import { configFor } from "../src/config/config.ts";
import { redactor } from "../src/log/redact.ts";
import { stamp } from "../src/snapshot/keys.ts";
import type { RunParams } from "../src/snapshot/procedure.ts";
import { instanceId } from "../src/snapshot/workflow.ts";
import { harness } from "./harness.ts";

// What the snapshot run specs share: the bucket and Workflow of the specs' worker, a harness with
// small parts and steps, a gate to catch a run mid-step, and a watch on a Workflow instance.

export const bucket = (testEnv as { SNAPSHOTS: R2Bucket }).SNAPSHOTS;
export const runs = (testEnv as { SNAPSHOT_RUNS: Workflow<RunParams> }).SNAPSHOT_RUNS;
export const MiB = 1024 * 1024;
export const ADMIN = "admin-token-for-runs-3c9e";

export const jobs = (...list: Record<string, unknown>[]) => ({ SNAPSHOT_JOBS: JSON.stringify(list) });

export async function keys(prefix: string): Promise<string[]> {
  const listed = await bucket.list({ prefix });
  return listed.objects.map((o) => o.key).sort();
}

export const sha256 = async (data: ArrayBuffer): Promise<string> =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", data))].map((b) => b.toString(16).padStart(2, "0")).join("");

/** The `_id` a page request starts after: keyset pages carry it as a range filter. */
export const afterId = (body: Record<string, unknown>): number =>
  (body.filters as { _id?: { gt?: number } } | undefined)?._id?.gt ?? 0;

/**
 * A step's first page past `_id` `from`: asked as rows (later pages of a CSV step come as CKAN's
 * CSV), and read by that step for certain, where a page fetched ahead may be dropped when the step
 * ends before it.
 */
export const stepStart = (body: Record<string, unknown>, from: number): boolean =>
  body.records_format !== "csv" && afterId(body) > from;

/**
 * Where the upstream holds a request until the spec lets it go: a run caught mid-step. Flags polled
 * on each side, not promises: a promise resolved from another request's context (the spec's, the
 * Workflow's) does not wake its waiter there.
 */
export function gate() {
  const state = { reached: false, open: false };
  const until = async (flag: "reached" | "open"): Promise<void> => {
    while (!state[flag]) await scheduler.wait(10);
  };
  return {
    reached: () => void (state.reached = true),
    open: () => void (state.open = true),
    arrived: () => until("reached"),
    opened: () => until("open"),
  };
}

type Fault = NonNullable<Parameters<typeof harness>[0]>["fault"];

/** The harness with the Workflow bound (unless `inline`), small parts and steps, and no upstream retries of its own (the steps retry). */
export function runsHarness(
  job: Record<string, unknown>,
  fault?: Fault,
  options: { inline?: boolean; bucket?: R2Bucket; env?: Record<string, string> } = {},
) {
  const h = harness({
    emulator: { version: "2.12" },
    env: {
      PAGE_SIZE: "5000",
      SNAPSHOT_PART_BYTES: String(5 * MiB),
      SNAPSHOT_STEP_BYTES: String(MiB),
      UPSTREAM_RETRIES: "0",
      ...(options.inline ? {} : { SNAPSHOT_RUNS: runs }),
      ...(options.bucket === undefined ? {} : { SNAPSHOTS: options.bucket }),
      ADMIN_TOKEN: ADMIN,
      ...options.env,
      ...jobs(job),
    },
    ...(fault === undefined ? {} : { fault }),
  });
  const deps = { config: configFor(h.env), redact: redactor(h.env), bucket };
  return { h, deps };
}

/** A run about to start, its retry delays off (an outage's backoff would take minutes). */
export async function watched(job: string, time: number) {
  const id = instanceId(job, stamp(time));
  const introspector = await introspectWorkflowInstance(runs, id);
  await introspector.modify(async (m) => {
    await m.disableSleeps();
  });
  return {
    /** The run's end and what it returned. Asked of the Workflow itself: the introspector's own wait misses the end of an instance someone tried to create twice. */
    async ended(): Promise<{ status: string; output?: unknown; error?: { name: string; message: string } }> {
      for (;;) {
        const status = await (await runs.get(id)).status();
        if (["complete", "errored", "terminated"].includes(status.status)) return status;
        await scheduler.wait(50);
      }
    },
    dispose: () => introspector.dispose(),
  };
}

/** Lets a held run go and waits for its end before the introspector goes (disposing a running one hangs). */
export async function settled(
  instance: Awaited<ReturnType<typeof watched>>,
  hold?: { open: () => void },
): Promise<void> {
  hold?.open();
  await instance.ended();
  await instance.dispose();
}

/** The bucket with some of its calls made to fail (a storage outage on one kind of write), the rest passed through. */
export function faultyBucket(fails: {
  complete?: () => boolean;
  put?: (key: string, value: unknown) => boolean;
}): R2Bucket {
  const upload = (real: R2MultipartUpload): R2MultipartUpload =>
    new Proxy(real, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop === "complete" && fails.complete !== undefined) {
          return async (...args: unknown[]) => {
            if (fails.complete!()) throw new Error("R2 is down (complete)");
            return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          };
        }
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  return new Proxy(bucket, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      if (prop === "resumeMultipartUpload")
        return (...args: unknown[]) => upload((value as (...a: unknown[]) => R2MultipartUpload).apply(target, args));
      if (prop === "put" && fails.put !== undefined) {
        return async (key: string, body: unknown, ...rest: unknown[]) => {
          if (fails.put!(key, body)) throw new Error("R2 is down (put)");
          return (value as (...a: unknown[]) => Promise<unknown>).apply(target, [key, body, ...rest]);
        };
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
}
