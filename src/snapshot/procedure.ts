import { HttpError, PermanentFailure, toHttpError } from "../errors.ts";
import { log } from "../log/log.ts";
import type { FormatName } from "../query/formats.ts";
import { isPermanent, RunCancelled, StepFailed } from "./errors.ts";
import {
  abandonFormat,
  beginFormat,
  publishFormat,
  sealFormat,
  settleRun,
  writeStep,
  type FormatRun,
  type SnapshotDeps,
} from "./format-steps.ts";
import { dueJobs, snapshotJobs, type SnapshotJob } from "./jobs.ts";
import { datedKey, legacyLatestKey, stamp } from "./keys.ts";
import { expired, readManifest, updateManifest, type SnapshotEntry } from "./manifest.ts";
import {
  claimJob,
  readRunRecord,
  releaseJob,
  updateRunRecord,
  type FormatState,
  type RunRecord,
  type UploadState,
} from "./run-record.ts";

export type { SnapshotDeps } from "./format-steps.ts";

// What a snapshot run is, once, for both runners: the cron invocation itself (inline, without
// SNAPSHOT_RUNS) and a Workflow instance (workflow.ts). README, "Scheduled snapshots", has its
// state table.

/** What starts a run: the job, the scheduled time it is for, and who asked. */
export interface RunParams {
  job: string;
  stamp: string;
  trigger: "cron" | "admin";
}

export interface RunResult {
  job: string;
  stamp: string;
  /** `skipped`: another run of the job was going, this one wrote nothing; `cancelled`: an operator ended it (see runs.ts). */
  status: "ok" | "failed" | "skipped" | "cancelled";
  written: SnapshotEntry[];
  /** Formats already written for this time (a second trigger of the same run). */
  skipped: FormatName[];
  error?: string;
}

/**
 * Runs the steps of a run. A step's result is what the steps after it see; `work` gets the try's
 * number. A failure the runner gives up on (for good, or on its last try) comes out as StepFailed,
 * its message safe to show.
 */
export interface StepRunner {
  step<T>(name: string, work: (tried: number) => Promise<T>): Promise<T>;
}

export interface RunDeps extends SnapshotDeps {
  /** Whether the run holding a job may still write: a Workflow instance's status, an inline run's age. */
  isAlive(held: RunRecord): Promise<boolean>;
}

/** The cron invocation's own runner: each step once, in this invocation (CKAN requests have their own retries). */
export const inlineRunner: StepRunner = {
  async step(_name, work) {
    try {
      return await work(1);
    } catch (error) {
      if (error instanceof RunCancelled) throw error;
      throw new StepFailed(error instanceof Error ? error.message : String(error));
    }
  },
};

/**
 * A step's work: a failed try is written to the run record (what `/snapshots` shows while the step
 * waits to be tried again), logged when it is not one a caller may read, and thrown again as
 * PermanentFailure (not tried again) or a plain Error, its message redacted either way.
 */
async function attempt<T>(
  deps: RunDeps,
  job: string,
  instance: string,
  label: string,
  tried: number,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof RunCancelled) throw error;
    const readable = error instanceof HttpError || error instanceof PermanentFailure;
    if (!readable) log({ event: "snapshot_step_error", job, step: label, cause: String(error) }, deps.redact);
    const message = deps.redact(
      readable ? error.message : "Internal error while writing the snapshot; the failure was logged.",
    );
    await updateRunRecord(deps.bucket, job, instance, (record) => {
      record.lastError = `${label}, attempt ${tried}: ${message}`;
    }).catch(() => {});
    throw isPermanent(error) ? new PermanentFailure(message) : new Error(message);
  }
}

/**
 * What a run for `time` has left to write: formats the manifest lists for it are done. A dated file
 * it does not list is what no run finished (the claim settled any run that ended mid-step): it goes.
 */
async function formatsDue(
  job: SnapshotJob,
  time: string,
  bucket: R2Bucket,
): Promise<{ due: FormatName[]; skipped: FormatName[] }> {
  const manifest = await readManifest(bucket, job.name);
  const due: FormatName[] = [];
  const skipped: FormatName[] = [];
  for (const format of job.formats) {
    if (manifest.snapshots.some((s) => s.stamp === time && s.format === format)) {
      skipped.push(format);
      continue;
    }
    const key = datedKey(job.name, time, format);
    if ((await bucket.head(key)) !== null) await bucket.delete(key);
    due.push(format);
  }
  return { due, skipped };
}

/** One step of a run, by its label (see StepRunner). */
type Step = <T>(label: string, work: () => Promise<T>) => Promise<T>;

/** What the claim step found: the job's holder (null: this run), and which formats are due. */
interface Claim {
  started: string;
  holder: string | null;
  due: FormatName[];
  skipped: FormatName[];
}

/**
 * One run of a job: claim the job; for each format due begin an upload, write steps until the file
 * ends, seal it at its dated key and publish it (or abandon it when a step fails for good); record
 * the run in the manifest; delete what is past `keep`; release the job. Deterministic between a
 * Workflow's replays: every clock read and R2 or CKAN call is inside a step.
 */
export async function runSnapshot(
  params: RunParams,
  instance: string,
  runner: StepRunner,
  deps: RunDeps,
): Promise<RunResult> {
  const result: RunResult = { job: params.job, stamp: params.stamp, status: "ok", written: [], skipped: [] };
  const job = snapshotJobs(deps.config).jobs.find((j) => j.name === params.job);
  if (job === undefined)
    return { ...result, status: "failed", error: `no snapshot job is named ${params.job} any more` };
  const step: Step = (label, work) =>
    runner.step(label, (tried) => attempt(deps, job.name, instance, label, tried, work));
  /** A step of the run once it holds the job: a run that no longer does (cancelled) stops before it writes. */
  const held: Step = (label, work) =>
    step(label, async () => {
      if ((await readRunRecord(deps.bucket, job.name))?.instance !== instance) throw new RunCancelled();
      return work();
    });

  const claim = await step("claim", () => claimRun(job, params, instance, deps));
  if (claim.holder !== null) {
    // Never two runs of a job writing at once: this one leaves the job to the run that holds it.
    log(
      { event: "snapshot", job: job.name, stamp: params.stamp, status: "skipped", running: claim.holder },
      deps.redact,
    );
    return {
      ...result,
      status: "skipped",
      error: `run ${claim.holder} of this job is still going; this run wrote nothing`,
    };
  }
  result.skipped = claim.skipped;
  try {
    const errors: string[] = [];
    for (const format of claim.due) {
      const run: FormatRun = { job, format, stamp: params.stamp, started: claim.started, instance };
      const outcome = await writeFormat(run, held, deps);
      if (typeof outcome === "string") errors.push(`${format}: ${outcome}`);
      else result.written.push(outcome);
    }
    if (errors.length > 0) Object.assign(result, { status: "failed", error: errors.join("; ") });
    await held("record", () => recordRun(job, claim.started, result, deps));
    await held("retention", () => retain(job, deps.bucket));
    await held("release", () => releaseJob(deps.bucket, job.name, instance));
  } catch (error) {
    // Cancelled: the cancel settled what this run left, wrote `last_run` and freed the job.
    if (!(error instanceof RunCancelled)) throw error;
    log({ event: "snapshot", job: job.name, stamp: params.stamp, status: "cancelled" }, deps.redact);
    return { ...result, status: "cancelled", error: "cancelled by an operator" };
  }
  return result;
}

/** The claim step: the job for this run (settling a run that ended mid-step), or the run that holds it. */
async function claimRun(job: SnapshotJob, params: RunParams, instance: string, deps: RunDeps): Promise<Claim> {
  const now = new Date().toISOString();
  const record: RunRecord = {
    instance,
    job: job.name,
    stamp: params.stamp,
    trigger: params.trigger,
    started: now,
    updated: now,
    current: null,
    done: [],
    lastError: null,
  };
  const settle = (dead: RunRecord): Promise<void> =>
    settleRun(dead, job, `run ${dead.instance} ended before it finished; a file it had sealed is kept`, deps);
  const holder = await claimJob(deps.bucket, record, (held) => deps.isAlive(held), settle);
  if (holder !== undefined) return { started: now, holder: holder.instance, due: [], skipped: [] };
  // A claim tried again keeps its first try's start.
  const started = (await readRunRecord(deps.bucket, job.name))?.started ?? now;
  return { started, holder: null, ...(await formatsDue(job, params.stamp, deps.bucket)) };
}

/**
 * One format's file: begin an upload, write steps until the file ends, seal it at its dated key and
 * publish it. A step that fails for good abandons the file: its message comes back instead.
 */
async function writeFormat(run: FormatRun, held: Step, deps: RunDeps): Promise<SnapshotEntry | string> {
  let state: FormatState | null = null;
  try {
    state = await held(`${run.format} begin`, () => beginFormat(run, deps));
    const parts: UploadState["newParts"] = [];
    while (!state.ended) {
      const prev: FormatState = state;
      state = await held(`${run.format} step ${prev.step + 1}`, () => writeStep(run, prev, deps));
      parts.push(...state.upload.newParts);
    }
    const written: FormatState = state;
    state = await held(`${run.format} seal`, () => sealFormat(run, written, parts, deps));
    const sealed: FormatState = state;
    return await held(`${run.format} publish`, () => publishFormat(run, sealed, deps));
  } catch (error) {
    if (!(error instanceof StepFailed)) throw error;
    const last = state;
    await held(`${run.format} abandon`, () => abandonFormat(run, last, deps));
    return error.message;
  }
}

/** The run's end in the manifest's `last_run`, and one log line. */
async function recordRun(job: SnapshotJob, started: string, result: RunResult, deps: RunDeps): Promise<void> {
  await updateManifest(deps.bucket, job.name, (manifest) => {
    manifest.last_run = {
      status: result.status === "ok" ? "ok" : "failed",
      stamp: result.stamp,
      started,
      finished: new Date().toISOString(),
      ...(result.error ? { error: result.error } : {}),
    };
  });
  log(
    {
      event: "snapshot",
      job: job.name,
      stamp: result.stamp,
      status: result.status,
      written: result.written.map((e) => ({ format: e.format, rows: e.rows, bytes: e.bytes })),
      skipped: result.skipped,
      ...(result.error ? { error: result.error } : {}),
    },
    deps.redact,
  );
}

/**
 * Dated files past `keep` (per format, never the newest) deleted, then unlisted: a file is never in
 * R2 without being listed. Cut off in between, the next run's retention finds them again.
 */
async function retain(job: SnapshotJob, bucket: R2Bucket): Promise<void> {
  const old = expired((await readManifest(bucket, job.name)).snapshots, job.keep).map((s) => s.key);
  // `latest` was once a copy of the newest file; it is the manifest's newest entry now.
  await bucket.delete([...old, ...job.formats.map((f) => legacyLatestKey(job.name, f))]);
  if (old.length === 0) return;
  await updateManifest(bucket, job.name, (manifest) => {
    manifest.snapshots = manifest.snapshots.filter((s) => !old.includes(s.key));
  });
}

/** An inline run's instance: the job, the time and a random part (two clicks in one second are two claims, one wins). */
const inlineInstance = (job: string, time: string): string => `${job}-${time}-${crypto.randomUUID().slice(0, 8)}`;

/** How long an inline run may hold a job without a step's progress: a cron invocation's wall time. */
const INLINE_HOLD_MS = 15 * 60_000;

/** Runs one job now, in this invocation (the cron's, or an operator's without the Workflow). */
export function runInline(
  job: SnapshotJob,
  time: number,
  trigger: RunParams["trigger"],
  deps: SnapshotDeps,
): Promise<RunResult> {
  const when = stamp(time);
  const isAlive = async (held: RunRecord): Promise<boolean> => Date.now() - Date.parse(held.updated) < INLINE_HOLD_MS;
  return runSnapshot({ job: job.name, stamp: when, trigger }, inlineInstance(job.name, when), inlineRunner, {
    ...deps,
    isAlive,
  });
}

/** The cron entry point without the Workflow: every valid job of this trigger, one at a time (each holds a part buffer). */
export async function runScheduled(cron: string, scheduledTime: number, deps: SnapshotDeps): Promise<RunResult[]> {
  const results: RunResult[] = [];
  for (const job of dueJobs(deps.config, cron, deps.redact)) {
    try {
      results.push(await runInline(job, scheduledTime, "cron", deps));
    } catch (error) {
      log(
        { event: "snapshot", job: job.name, status: "failed", error: toHttpError(error).message, cause: String(error) },
        deps.redact,
      );
    }
  }
  return results;
}
