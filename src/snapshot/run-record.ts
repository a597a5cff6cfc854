import type { FormatName } from "../query/formats.ts";
import { runKey } from "./keys.ts";

/**
 * A job's run in progress, in R2 beside its snapshots: it holds the job (one run writes at a time)
 * and says how far the run got, for `/snapshots` and operators. Written by the run's own steps only.
 */
export interface RunRecord {
  /** The Workflow instance: `<job>-<stamp>`. */
  instance: string;
  job: string;
  stamp: string;
  trigger: "cron" | "admin";
  started: string;
  updated: string;
  /** The format being written, null before the first and after the last. */
  format: FormatName | null;
  /** Steps finished of the current format. */
  step: number;
  /** Rows and bytes of the current format written so far. */
  rows: number;
  bytes: number;
  parts: number;
  /** Formats this run has finished: written, or failed. */
  done: { format: FormatName; status: "ok" | "failed"; rows: number; bytes: number }[];
  /** The last failed attempt of a step (retried with backoff): kept once the run got past it, so an outage it rode out shows. */
  lastError: string | null;
  /** The multipart upload being assembled, so a cancelled run's upload can be aborted. */
  upload: { key: string; id: string } | null;
}

export async function readRunRecord(bucket: R2Bucket, job: string): Promise<RunRecord | undefined> {
  const object = await bucket.get(runKey(job));
  return object === null ? undefined : ((await object.json()) as RunRecord);
}

const write = (bucket: R2Bucket, record: RunRecord, onlyIf?: R2Conditional): Promise<R2Object | null> =>
  bucket.put(runKey(record.job), JSON.stringify(record), {
    httpMetadata: { contentType: "application/json; charset=utf-8" },
    ...(onlyIf === undefined ? {} : { onlyIf }),
  });

/**
 * Takes the job for `record.instance`: free, already its own (a retried step), or held by a run that
 * is no longer alive (`isAlive` asks the Workflow). Conditional writes, so of two runs starting at
 * once exactly one holds the job. Returns the holder when another live run has it.
 */
export async function claimJob(bucket: R2Bucket, record: RunRecord, isAlive: (instance: string) => Promise<boolean>): Promise<RunRecord | undefined> {
  for (let attempt = 0; attempt < 8; attempt++) {
    const object = await bucket.get(runKey(record.job));
    if (object !== null) {
      const held = (await object.json()) as RunRecord;
      if (held.instance === record.instance) return undefined;
      if (await isAlive(held.instance)) return held;
    }
    const written = await write(bucket, record, object === null ? { etagDoesNotMatch: "*" } : { etagMatches: object.etag });
    if (written !== null) return undefined;
  }
  throw new Error(`the run record of ${record.job} kept changing under this run`);
}

/** Progress of the run that holds the job; nothing when it no longer does (cancelled). */
export async function updateRunRecord(bucket: R2Bucket, job: string, instance: string, change: (record: RunRecord) => void): Promise<void> {
  const object = await bucket.get(runKey(job));
  if (object === null) return;
  const record = (await object.json()) as RunRecord;
  if (record.instance !== instance) return;
  change(record);
  record.updated = new Date().toISOString();
  await write(bucket, record, { etagMatches: object.etag });
}

/** The job is free again: only its holder lets it go. */
export async function releaseJob(bucket: R2Bucket, job: string, instance: string): Promise<void> {
  const held = await readRunRecord(bucket, job);
  if (held?.instance === instance) await bucket.delete(runKey(job));
}
