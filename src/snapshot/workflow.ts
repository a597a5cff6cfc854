import type { WorkflowStep, WorkflowStepConfig } from "cloudflare:workers";
import type { UpstreamFetch } from "../ckan/types.ts";
import { configFor } from "../config/config.ts";
import type { Env } from "../config/env.ts";
import { bindingError, HttpError, PermanentFailure, toHttpError } from "../errors.ts";
import { ENCODERS } from "../format/index.ts";
import { log } from "../log/log.ts";
import { redactor } from "../log/redact.ts";
import type { FormatName } from "../query/formats.ts";
import { storedEncoding } from "./compress.ts";
import { snapshotJobs } from "./jobs.ts";
import type { SnapshotEntry } from "./manifest.ts";
import { claimJob, readRunRecord, releaseJob, updateRunRecord, type RunRecord } from "./run-record.ts";
import { formatsDue, recordRun, writeSnapshot, type JobResult, type SnapshotDeps } from "./run.ts";
import { abandonFormat, publishParts, sealParts, writeStep, type FormatRun, type PartsState } from "./steps.ts";

/** What starts a run: the job, the scheduled time it is for, and who asked. */
export interface RunParams {
  job: string;
  stamp: string;
  trigger: "cron" | "admin";
}

export interface RunDeps extends SnapshotDeps {
  /** The Workflow itself: whether the run holding a job is still alive. */
  runs: Workflow<RunParams>;
}

/** One instance per job and scheduled time: creating it twice fails, so a run starts once. */
export const instanceId = (job: string, stamp: string): string => `${job}-${stamp}`;

/** Tries of a step that reads CKAN or writes R2: the first and eight more. */
const TRIES = 9;
/** Seconds before the second try; each wait after doubles (about two hours in all). */
const FIRST_WAIT_SECONDS = 30;
/** One try a step: a failed try is a result, and the wait before the next is a durable sleep. */
const ONCE: WorkflowStepConfig = { retries: { limit: 0, delay: 0 }, timeout: "15 minutes" };

/** A try's outcome as the step stores it. */
type Outcome<T> = { ok: true; value: T } | { ok: false; permanent: boolean; message: string };

/**
 * A step that may fail, tried up to TRIES times, 30 s after the first failure, then twice as long
 * each time, so an outage of CKAN (or R2) is waited out. A failed try comes back as the step's result
 * instead of an exception thrown into the engine (which the runtime reports as an uncaught error
 * every time), and the wait is `step.sleep`: durable, and visible to the Workflow's own tooling.
 * A permanent failure (PermanentFailure) or the last try's is thrown here, in the run. Results are
 * JSON text: a step result must be serialisable, which the types of most results cannot prove.
 */
async function durable<T>(step: WorkflowStep, name: string, work: (tried: number) => Promise<T>): Promise<T> {
  for (let tried = 1; ; tried++) {
    const text = await step.do(tried === 1 ? name : `${name} (try ${tried})`, ONCE, async () => {
      let outcome: Outcome<T>;
      try {
        outcome = { ok: true, value: await work(tried) };
      } catch (error) {
        outcome = { ok: false, permanent: error instanceof PermanentFailure, message: error instanceof Error ? error.message : String(error) };
      }
      return JSON.stringify(outcome);
    });
    const outcome = JSON.parse(text) as Outcome<T>;
    if (outcome.ok) return outcome.value;
    if (outcome.permanent || tried === TRIES) throw new Error(outcome.message);
    await step.sleep(`${name} (wait ${tried})`, `${FIRST_WAIT_SECONDS * 2 ** (tried - 1)} seconds`);
  }
}

const ENDED = new Set(["errored", "terminated", "complete", "gone"]);

/**
 * A Workflow instance's status; "gone" for an id the Workflow no longer knows (past its retention),
 * "unknown" when it does not answer within a few seconds (a busy instance may be slow to: never
 * mistaken for one that ended).
 */
export async function statusOf(runs: Workflow<RunParams>, instance: string): Promise<string> {
  const asked = (async () => {
    let handle: WorkflowInstance;
    try {
      handle = await runs.get(instance);
    } catch {
      return "gone";
    }
    return (await handle.status()).status as string;
  })().catch(() => "unknown");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<string>((resolve) => (timer = setTimeout(resolve, 3000, "unknown")));
  try {
    return await Promise.race([asked, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether a Workflow instance may still write: one that cannot be told ended is taken as alive. */
export const isAlive = async (runs: Workflow<RunParams>, instance: string): Promise<boolean> => !ENDED.has(await statusOf(runs, instance));

/** A failure a retry cannot mend: the request is wrong (CKAN's 4xx, a row limit), or the table changed. */
function isPermanent(error: unknown): boolean {
  if (error instanceof PermanentFailure) return true;
  return error instanceof HttpError && error.status < 500 && error.status !== 408 && error.status !== 429;
}

/**
 * A step's work: a failed attempt is written to the run record (what `/snapshots` shows while the
 * step waits to be retried) with its message redacted, and a permanent one is not retried.
 */
async function attempt<T>(run: FormatRun, deps: RunDeps, label: string, tried: number, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const message = error instanceof PermanentFailure ? error.message : toHttpError(error).message;
    const text = deps.redact(`${label}, attempt ${tried}: ${message}`);
    if (!(error instanceof HttpError)) log({ event: "snapshot_step_error", job: run.job.name, step: label, cause: String(error) }, deps.redact);
    await updateRunRecord(deps.bucket, run.job.name, run.instance, (record) => {
      record.lastError = text;
    }).catch(() => {});
    const failure = isPermanent(error) ? new PermanentFailure(deps.redact(message)) : new Error(deps.redact(message));
    throw failure;
  }
}

/** A format in steps: write steps until the export ends, then seal and publish. */
async function writeInSteps(run: FormatRun, step: WorkflowStep, deps: RunDeps): Promise<SnapshotEntry> {
  let last: PartsState | null = null;
  const parts: PartsState["parts"] = [];
  for (let n = 1; last === null || !last.ended; n++) {
    const prev: PartsState | null = last;
    const label = `${run.format} step ${n}`;
    last = await durable(step, label, (tried) => attempt(run, deps, label, tried, () => writeStep(run, prev, n, deps)));
    parts.push(...last.parts);
  }
  const final: PartsState = last;
  const seal = `${run.format} seal`;
  const sealed = final.upload === null ? null : await durable(step, seal, (tried) => attempt(run, deps, seal, tried, () => sealParts(final, parts, deps)));
  const publish = `${run.format} publish`;
  return durable(step, publish, (tried) => attempt(run, deps, publish, tried, () => publishParts(run, final, sealed, deps)));
}

/**
 * One run of a job as a Workflow: claim the job, write each format due (in steps of a few parts, or
 * XLSX in one step: its ZIP and deflate state cannot be carried between steps), record the run.
 * A format that fails for good has its upload aborted and its error in the manifest's `last_run`;
 * the others are still written. Deterministic between replays: every clock read is inside a step.
 */
export async function runSnapshot(params: RunParams, instance: string, step: WorkflowStep, deps: RunDeps): Promise<JobResult> {
  const job = snapshotJobs(deps.config).jobs.find((j) => j.name === params.job);
  const result: JobResult = { job: params.job, stamp: params.stamp, status: "ok", written: [], skipped: [] };
  if (job === undefined) return { ...result, status: "failed", error: `no snapshot job is named ${params.job} any more` };

  const claim = await durable(step, "claim", async () => {
    const now = new Date().toISOString();
    const record: RunRecord = {
      instance,
      job: job.name,
      stamp: params.stamp,
      trigger: params.trigger,
      started: now,
      updated: now,
      format: null,
      step: 0,
      rows: 0,
      bytes: 0,
      parts: 0,
      done: [],
      lastError: null,
      upload: null,
    };
    const holder = await claimJob(deps.bucket, record, (other) => isAlive(deps.runs, other));
    if (holder !== undefined) return { started: now, holder: holder.instance as string | null, due: [] as FormatName[], adopted: [] as SnapshotEntry[], skipped: [] as FormatName[] };
    const started = (await readRunRecord(deps.bucket, job.name))?.started ?? now;
    return { started, holder: null, ...(await formatsDue(job, params.stamp, deps.bucket)) };
  });
  if (claim.holder !== null) {
    // Never two runs of a job writing at once: this one leaves the job to the run that holds it.
    log({ event: "snapshot", job: job.name, stamp: params.stamp, status: "skipped", running: claim.holder }, deps.redact);
    return { ...result, status: "failed", error: `run ${claim.holder} of this job is still going; this run wrote nothing` };
  }

  result.skipped = claim.skipped;
  const entries: SnapshotEntry[] = [...claim.adopted];
  const errors: string[] = [];
  for (const format of claim.due) {
    const run: FormatRun = { job, format, stamp: params.stamp, started: claim.started, instance };
    let entry: SnapshotEntry | undefined;
    try {
      // A gzip stream's state does not fit between steps either: such a file is written in one step.
      entry = ENCODERS[format].resumable && storedEncoding(job, format) === undefined
        ? await writeInSteps(run, step, deps)
        : await durable(step, `${format} whole`, (tried) => attempt(run, deps, `${format} whole`, tried, () => writeSnapshot(job, format, params.stamp, deps)));
      entries.push(entry);
      result.written.push(entry);
    } catch (error) {
      // What step.do throws after the last attempt carries the message `attempt` made (redacted).
      errors.push(deps.redact(`${format}: ${error instanceof Error ? error.message : String(error)}`));
      await durable(step, `${format} abandon`, async () => {
        const record = await readRunRecord(deps.bucket, job.name);
        await abandonFormat(run, record?.instance === instance ? record.upload : null, deps);
      });
    }
    const finished = entry;
    await durable(step, `${format} done`, () => noteDone(run, finished, deps));
  }
  if (errors.length > 0) Object.assign(result, { status: "failed", error: errors.join("; ") });
  await durable(step, "record", async () => {
    await recordRun(job, claim.started, result, entries, deps);
    await releaseJob(deps.bucket, job.name, instance);
  });
  return result;
}

async function noteDone(run: FormatRun, entry: SnapshotEntry | undefined, deps: RunDeps): Promise<void> {
  await updateRunRecord(deps.bucket, run.job.name, run.instance, (record) => {
    record.done.push({ format: run.format, status: entry === undefined ? "failed" : "ok", rows: entry?.rows ?? record.rows, bytes: entry?.bytes ?? record.bytes });
    Object.assign(record, { format: null, step: 0, rows: 0, bytes: 0, parts: 0, upload: null });
  });
}

/** The snapshot deps of a deployed worker: its bindings and settings, CKAN over `upstreamFetch`. */
export function runDeps(env: Env, upstreamFetch: UpstreamFetch): RunDeps {
  if (env.SNAPSHOTS === undefined) throw bindingError("SNAPSHOTS", "the R2 bucket", "[[r2_buckets]]");
  if (env.SNAPSHOT_RUNS === undefined) throw bindingError("SNAPSHOT_RUNS", "the Workflow", "[[workflows]]");
  return { bucket: env.SNAPSHOTS, config: configFor(env), upstreamFetch, redact: redactor(env), runs: env.SNAPSHOT_RUNS as Workflow<RunParams> };
}
