import { HttpError, toHttpError } from "../errors.ts";
import { log } from "../log/log.ts";
import type { Redact } from "../log/redact.ts";
import type { Config } from "../config/config.ts";
import { settleRun } from "./format-steps.ts";
import { dueJobs, type SnapshotJob } from "./jobs.ts";
import { stamp } from "./keys.ts";
import type { RunParams } from "./procedure.ts";
import { readRunRecord, releaseJob, type RunRecord } from "./run-record.ts";
import { hasEnded, instanceId, isAlive, statusOf, type Runs } from "./workflow.ts";

// Runs as Workflow instances, as routes and the cron see them: started, shown, cancelled. What goes
// back to a client is data; routes/snapshots.ts makes the responses.

/** A run as `/snapshots` shows it: what it is writing and how far it got. */
export interface RunView {
  instance: string;
  job: string;
  stamp: string;
  trigger: "cron" | "admin";
  /** The Workflow instance's status: queued, running, waiting (a step waits for its retry)... */
  status: string;
  started: string;
  updated: string;
  format: string | null;
  step: number;
  rows: number;
  bytes: number;
  parts: number;
  done: RunRecord["done"];
  last_error: string | null;
}

export interface Started {
  job: string;
  stamp: string;
  instance: string;
  /** False: an instance for this job and time exists already (a second trigger of the same run). */
  started: boolean;
  error?: string;
}

async function start(runs: Runs, job: SnapshotJob, time: string, trigger: RunParams["trigger"]): Promise<Started> {
  const instance = instanceId(job.name, time);
  // createBatch skips an id that exists (create would throw, and the runtime report it as uncaught):
  // a second trigger of the same time starts nothing.
  const created = await runs.createBatch([{ id: instance, params: { job: job.name, stamp: time, trigger } }]);
  return { job: job.name, stamp: time, instance, started: created.some((handle) => handle.id === instance) };
}

/**
 * The cron trigger with the Workflow bound: one instance per due job, its id the job and the
 * scheduled time, so a second trigger of the same time starts nothing. Returns at once; the runs go
 * on in their instances.
 */
export async function startScheduled(
  cron: string,
  scheduledTime: number,
  deps: { config: Config; redact: Redact },
  runs: Runs,
): Promise<Started[]> {
  const time = stamp(scheduledTime);
  const started: Started[] = [];
  for (const job of dueJobs(deps.config, cron, deps.redact)) {
    try {
      started.push(await start(runs, job, time, "cron"));
    } catch (error) {
      const message = deps.redact(toHttpError(error).message);
      log(
        { event: "snapshot", job: job.name, stamp: time, status: "failed", error: message, cause: String(error) },
        deps.redact,
      );
      started.push({
        job: job.name,
        stamp: time,
        instance: instanceId(job.name, time),
        started: false,
        error: message,
      });
    }
  }
  return started;
}

function view(record: RunRecord, status: string): RunView {
  const current = record.current;
  return {
    instance: record.instance,
    job: record.job,
    stamp: record.stamp,
    trigger: record.trigger,
    status,
    started: record.started,
    updated: record.updated,
    format: current?.format ?? null,
    step: current?.step ?? 0,
    rows: current?.rows ?? 0,
    bytes: current?.bytes ?? 0,
    parts: current?.upload.parts ?? 0,
    done: record.done,
    last_error: record.lastError,
  };
}

/** The job's run in progress, or undefined: for `GET /snapshots` (each job's `running`) and GET /snapshots/<name>/run. */
export async function runningRun(job: string, bucket: R2Bucket, runs: Runs): Promise<RunView | undefined> {
  const record = await readRunRecord(bucket, job);
  if (record === undefined) return undefined;
  const status = await statusOf(runs, record.instance);
  return hasEnded(status) ? undefined : view(record, status);
}

/** POST /snapshots/<name>/run: the run already in progress (never two at once), or the one started for now. */
export async function startRunNow(
  job: SnapshotJob,
  now: number,
  bucket: R2Bucket,
  runs: Runs,
): Promise<{ running: RunView } | Started> {
  const running = await runningRun(job.name, bucket, runs);
  if (running !== undefined) return { running };
  return start(runs, job, stamp(now), "admin");
}

/**
 * DELETE /snapshots/<name>/run: ends the run in progress. What it left is settled (a file it had
 * sealed listed, its upload aborted, its staging deleted), the job freed, and the manifest's
 * `last_run` says it was cancelled; the snapshots already written stay. The run itself finds at its
 * next step that it no longer holds the job and ends there, writing nothing more (its instance
 * completes with `status: "cancelled"`). It is not terminated: a step cut off mid-call is what a
 * cancel is there to avoid, and a late writer cleans up after itself (see writeStep).
 */
export async function cancelRun(
  job: SnapshotJob,
  bucket: R2Bucket,
  runs: Runs,
): Promise<{ cancelled: string; job: string; stamp: string }> {
  const record = await readRunRecord(bucket, job.name);
  if (record === undefined) throw new HttpError(404, `No run of ${job.name} is in progress.`);
  const alive = await isAlive(runs, record.instance);
  // A run whose instance ended mid-step (terminated, lost) is settled now rather than by the next run.
  await settleRun(
    record,
    job,
    alive
      ? "cancelled by an operator"
      : `run ${record.instance} ended before it finished; a file it had sealed is kept`,
    { bucket },
  );
  await releaseJob(bucket, job.name, record.instance);
  if (!alive) throw new HttpError(404, `No run of ${job.name} is in progress.`);
  return { cancelled: record.instance, job: job.name, stamp: record.stamp };
}
