import type { Resume } from "../ckan/table.ts";
import type { FormatName } from "../query/formats.ts";
import type { Column } from "../rows/types.ts";
import { runKey } from "./keys.ts";
import type { SnapshotEntry } from "./manifest.ts";
import type { Sha256State } from "./sha256.ts";

/** A multipart upload at a format's dated key, as one step hands it to the next. */
export interface UploadState {
  /** The dated key: the upload is completed there (no assembled copy). */
  key: string;
  id: string;
  /** Parts uploaded so far, all steps. */
  parts: number;
  /** The parts the last step uploaded (the run joins every step's for `complete`: all of them would outgrow a step result). */
  newParts: { partNumber: number; etag: string }[];
  /** The SHA-256 of the bytes so far, carried from step to step: the file is never read back to hash it. */
  hash: Sha256State;
  /** The staging object holding the bytes that did not fill a part, and their count. */
  carry: { key: string; bytes: number } | null;
}

/** JSON, as a run record and a Workflow step's result hold it. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** What a format's file carries from one write step to the next besides its rows (a deflater's CRC and sizes: see format-steps.ts). */
export type StepCarry = { [key: string]: Json };

/** One format of a run, after its last step: what the next step goes on from. */
export interface FormatState {
  format: FormatName;
  /** Write steps done. */
  step: number;
  rows: number;
  /** Bytes stored (gzipped ones for a gzipped file). */
  bytes: number;
  /** The export's own bytes, before gzip. */
  decodedBytes: number;
  total: number | null;
  /** The columns as the file is written from them (with the data dictionary's label and description): every step must see the same. */
  columns: Column[];
  /**
   * What the file is written from (the format's query, how it is stored, the job's description), as
   * JSON: every step must see the same, since each reads the job from SNAPSHOT_JOBS as then deployed.
   * Absent in states an older version wrote.
   */
  definition?: string;
  /** Where the next write step goes on; null once the file has ended. */
  resume: Resume | null;
  /** What the format's step encoder carries to the next step; null before the first and after the last. */
  carried: StepCarry | null;
  ended: boolean;
  upload: UploadState;
  /** Set by seal, before the dated object is made whole: what the manifest will list. */
  entry: SnapshotEntry | null;
}

/**
 * A job's run, in R2 beside its snapshots (`.run.json`): it holds the job (one run writes at a time),
 * says how far the run got (for `/snapshots` and operators), and is what a cancel or the next run
 * reads to clean up after a run that ended mid-step. Written by the run's own steps, each writing the
 * state it hands on; a Workflow's step results hold the same states.
 */
export interface RunRecord {
  /** `<job>-<stamp>` for a Workflow instance; an inline run's has a random suffix. */
  instance: string;
  job: string;
  stamp: string;
  trigger: "cron" | "admin";
  started: string;
  updated: string;
  /** The format being written: null before the first and after the last. */
  current: FormatState | null;
  /** Formats this run has finished: written, or failed. */
  done: { format: FormatName; status: "ok" | "failed"; rows: number; bytes: number }[];
  /** The last failed try of a step (retried with backoff): kept once the run got past it, so an outage it rode out shows. */
  lastError: string | null;
}

export async function readRunRecord(bucket: R2Bucket, job: string): Promise<RunRecord | undefined> {
  const object = await bucket.get(runKey(job));
  return object === null ? undefined : ((await object.json()) as RunRecord);
}

const write = (bucket: R2Bucket, record: RunRecord, onlyIf: R2Conditional): Promise<R2Object | null> =>
  bucket.put(runKey(record.job), JSON.stringify(record), {
    httpMetadata: { contentType: "application/json; charset=utf-8" },
    onlyIf,
  });

/**
 * Takes the job for `record.instance`: free, already its own (a retried step), or held by a run that
 * is no longer alive (`isAlive`), whose record is handed to `settle` first (what it left behind is
 * cleaned up). Conditional writes, so of two runs starting at once exactly one holds the job.
 * Returns the holder when another live run has it.
 */
export async function claimJob(
  bucket: R2Bucket,
  record: RunRecord,
  isAlive: (held: RunRecord) => Promise<boolean>,
  settle: (dead: RunRecord) => Promise<void>,
): Promise<RunRecord | undefined> {
  for (let attempt = 0; attempt < 8; attempt++) {
    const object = await bucket.get(runKey(record.job));
    if (object !== null) {
      const held = (await object.json()) as RunRecord;
      if (held.instance === record.instance) return undefined;
      if (await isAlive(held)) return held;
      await settle(held);
    }
    const written = await write(
      bucket,
      record,
      object === null ? { etagDoesNotMatch: "*" } : { etagMatches: object.etag },
    );
    if (written !== null) return undefined;
  }
  throw new Error(`the run record of ${record.job} kept changing under this run`);
}

/** The run's state after a step. False, and nothing written, when the run no longer holds the job (cancelled). */
export async function updateRunRecord(
  bucket: R2Bucket,
  job: string,
  instance: string,
  change: (record: RunRecord) => void,
): Promise<boolean> {
  for (let attempt = 0; attempt < 8; attempt++) {
    const object = await bucket.get(runKey(job));
    if (object === null) return false;
    const record = (await object.json()) as RunRecord;
    if (record.instance !== instance) return false;
    change(record);
    record.updated = new Date().toISOString();
    if ((await write(bucket, record, { etagMatches: object.etag })) !== null) return true;
  }
  throw new Error(`the run record of ${job} kept changing under this run`);
}

/** The job is free again: only its holder lets it go. */
export async function releaseJob(bucket: R2Bucket, job: string, instance: string): Promise<void> {
  const held = await readRunRecord(bucket, job);
  if (held?.instance === instance) await bucket.delete(runKey(job));
}
