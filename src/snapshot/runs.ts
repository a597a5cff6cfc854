import { HttpError, toHttpError } from "../errors.ts";
import { log } from "../log/log.ts";
import { snapshotJobs, type SnapshotJob } from "./jobs.ts";
import { stamp } from "./keys.ts";
import { updateManifest } from "./manifest.ts";
import { readRunRecord, releaseJob, type RunRecord } from "./run-record.ts";
import type { SnapshotDeps } from "./run.ts";
import { abandonFormat } from "./steps.ts";
import { instanceId, isAlive, statusOf, type RunParams } from "./workflow.ts";

type Runs = Workflow<RunParams>;

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
export async function startScheduled(cron: string, scheduledTime: number, deps: Pick<SnapshotDeps, "config" | "redact">, runs: Runs): Promise<Started[]> {
  const { jobs, problems } = snapshotJobs(deps.config);
  for (const problem of problems) log({ event: "snapshot_config", job: problem.job, error: problem.message }, deps.redact);
  const time = stamp(scheduledTime);
  const started: Started[] = [];
  for (const job of jobs) {
    if (job.cron !== undefined && job.cron !== cron) continue;
    try {
      started.push(await start(runs, job, time, "cron"));
    } catch (error) {
      const message = deps.redact(toHttpError(error).message);
      log({ event: "snapshot", job: job.name, stamp: time, status: "failed", error: message, cause: String(error) }, deps.redact);
      started.push({ job: job.name, stamp: time, instance: instanceId(job.name, time), started: false, error: message });
    }
  }
  return started;
}

async function view(record: RunRecord, runs: Runs): Promise<RunView> {
  const status = await statusOf(runs, record.instance);
  return {
    instance: record.instance,
    job: record.job,
    stamp: record.stamp,
    trigger: record.trigger,
    status,
    started: record.started,
    updated: record.updated,
    format: record.format,
    step: record.step,
    rows: record.rows,
    bytes: record.bytes,
    parts: record.parts,
    done: record.done,
    last_error: record.lastError,
  };
}

/** The job's run in progress, or undefined: for `GET /snapshots` (each job's `running`). */
export async function runningRun(job: string, bucket: R2Bucket, runs: Runs): Promise<RunView | undefined> {
  const record = await readRunRecord(bucket, job);
  if (record === undefined) return undefined;
  const shown = await view(record, runs);
  return ["errored", "terminated", "complete", "gone"].includes(shown.status) ? undefined : shown;
}

/** GET /snapshots/<name>/run: the job's run in progress (200), or a 404 saying none is. */
export async function showRun(job: SnapshotJob, bucket: R2Bucket, runs: Runs): Promise<Response> {
  const running = await runningRun(job.name, bucket, runs);
  if (running === undefined) throw new HttpError(404, `No run of ${job.name} is in progress. GET /snapshots shows its last run.`);
  return Response.json(running, { headers: { "cache-control": "no-store" } });
}

/**
 * POST /snapshots/<name>/run (operators): starts a run for now (202), or answers 409 with the run
 * already in progress: never two runs of a job writing at once. Two clicks in one second are one run.
 */
export async function startRunNow(job: SnapshotJob, now: number, bucket: R2Bucket, runs: Runs): Promise<Response> {
  const running = await runningRun(job.name, bucket, runs);
  if (running !== undefined) {
    return Response.json(
      { error: { status: 409, message: `Run ${running.instance} of ${job.name} is in progress; cancel it first (DELETE /snapshots/${job.name}/run) or let it finish.` }, running },
      { status: 409, headers: { "cache-control": "no-store" } },
    );
  }
  const started = await start(runs, job, stamp(now), "admin");
  return Response.json(started, { status: started.started ? 202 : 200, headers: { "cache-control": "no-store" } });
}

/**
 * DELETE /snapshots/<name>/run (operators): ends the run in progress. Its instance is terminated, the
 * upload it was assembling aborted, the job freed, and the manifest's `last_run` says it was
 * cancelled; `latest` and the snapshots already written stay.
 */
export async function cancelRun(job: SnapshotJob, deps: Pick<SnapshotDeps, "bucket">, runs: Runs): Promise<Response> {
  const record = await readRunRecord(deps.bucket, job.name);
  if (record === undefined || !(await isAlive(runs, record.instance))) throw new HttpError(404, `No run of ${job.name} is in progress.`);
  await (await runs.get(record.instance)).terminate();
  if (record.format !== null) {
    await abandonFormat({ job, format: record.format, stamp: record.stamp, started: record.started, instance: record.instance }, record.upload, deps);
  }
  const finished = new Date().toISOString();
  await updateManifest(deps.bucket, job.name, (manifest) => {
    manifest.last_run = { status: "failed", stamp: record.stamp, started: record.started, finished, error: "cancelled by an operator" };
  });
  await releaseJob(deps.bucket, job.name, record.instance);
  return Response.json({ cancelled: record.instance, job: job.name, stamp: record.stamp }, { headers: { "cache-control": "no-store" } });
}
