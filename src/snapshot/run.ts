import { siteFor } from "../ckan/site.ts";
import type { UpstreamFetch } from "../ckan/types.ts";
import type { Config } from "../config/config.ts";
import { toHttpError } from "../errors.ts";
import { contentDisposition } from "../query/filename.ts";
import { openExport } from "../export/pipeline.ts";
import { FORMATS, type FormatName } from "../query/formats.ts";
import type { Redact } from "../log/redact.ts";
import { log } from "../log/log.ts";
import { snapshotJobs, type SnapshotJob } from "./jobs.ts";
import { datedKey, latestKey, stagingKey, stamp } from "./keys.ts";
import { expired, newestFirst, readManifest, updateManifest, type SnapshotEntry } from "./manifest.ts";
import { copyObject, writeObject } from "./r2-writer.ts";
import { storedBody, storedEncoding } from "./compress.ts";

export interface SnapshotDeps {
  bucket: R2Bucket;
  config: Config;
  upstreamFetch: UpstreamFetch;
  redact: Redact;
}

export interface JobResult {
  job: string;
  stamp: string;
  status: "ok" | "failed";
  written: SnapshotEntry[];
  skipped: FormatName[];
  error?: string;
}

export function httpMetadata(format: FormatName, name: string, immutable: boolean, encoding: "gzip" | undefined = undefined): R2HTTPMetadata {
  return {
    contentType: FORMATS[format].contentType,
    contentDisposition: contentDisposition(name),
    cacheControl: immutable ? "public, max-age=31536000, immutable" : "public, max-age=300",
    ...(encoding === undefined ? {} : { contentEncoding: encoding }),
  };
}

/** Rebuilds a manifest entry from an object's own metadata (an earlier run wrote it, then was cut off). */
function entryFromObject(object: R2Object, format: FormatName, time: string): SnapshotEntry {
  const meta = object.customMetadata ?? {};
  return {
    key: object.key,
    format,
    stamp: time,
    rows: Number(meta.rows ?? 0),
    bytes: object.size,
    sha256: meta.sha256 ?? "",
    started: meta.started ?? object.uploaded.toISOString(),
    finished: meta.finished ?? object.uploaded.toISOString(),
    query: JSON.parse(meta.query ?? "{}") as Record<string, unknown>,
    total: meta.total ? Number(meta.total) : null,
    ...encodingOf(object.httpMetadata?.contentEncoding === "gzip" ? "gzip" : undefined, Number(meta.decoded_bytes ?? 0)),
  };
}

/** A gzipped snapshot's entry says so: its `bytes` and `sha256` are the stored gzip file's. */
const encodingOf = (encoding: "gzip" | undefined, decoded: number): Pick<SnapshotEntry, "encoding" | "decoded_bytes"> =>
  encoding === undefined ? {} : { encoding, decoded_bytes: decoded };

/** A dated snapshot's custom metadata: what `entryFromObject` reads back. */
export function snapshotMetadata(job: SnapshotJob, entry: Pick<SnapshotEntry, "rows" | "sha256" | "started" | "finished" | "total" | "decoded_bytes">): Record<string, string> {
  const meta: Record<string, string> = {
    rows: String(entry.rows),
    sha256: entry.sha256,
    query: JSON.stringify(job.description),
    started: entry.started,
    finished: entry.finished,
  };
  if (entry.total !== null) meta.total = String(entry.total);
  if (entry.decoded_bytes !== undefined) meta.decoded_bytes = String(entry.decoded_bytes);
  return meta;
}

/** `latest` becomes a copy of the dated snapshot, which is whole by now. */
export async function publishLatest(bucket: R2Bucket, job: SnapshotJob, entry: SnapshotEntry, customMetadata: Record<string, string>): Promise<void> {
  try {
    await copyObject(bucket, entry.key, latestKey(job.name, entry.format), {
      httpMetadata: httpMetadata(entry.format, `${job.name}.${FORMATS[entry.format].extension}`, false, entry.encoding),
      customMetadata,
    });
  } catch (error) {
    // The dated snapshot is whole and stays listed (so retention will remove it in time); `latest`
    // keeps the previous one, and the run is reported as failed.
    throw Object.assign(new Error("latest was not updated"), { entry, cause: error });
  }
}

/** One format of one run: the export pipeline with R2 as its sink; `latest` only after the dated object is whole. */
export async function writeSnapshot(job: SnapshotJob, format: FormatName, time: string, deps: SnapshotDeps): Promise<SnapshotEntry> {
  const { bucket, config } = deps;
  const key = datedKey(job.name, time, format);
  const query = job.queries[format]!;
  const started = new Date().toISOString();
  // R2 is the reader: no client to stall (a part's upload is waited for, however long it takes).
  const exported = await openExport(query, { ...config, stallSeconds: 0 }, siteFor(config, deps.upstreamFetch));
  const total = exported.table.total ?? null;
  const encoding = storedEncoding(job, format);
  let finished = "";
  let customMetadata: Record<string, string> = {};
  const written = await writeObject(bucket, key, storedBody(exported.body, encoding), {
    partBytes: config.snapshotPartBytes,
    // One staging key per run: two runs of the same second must not assemble into one object.
    stagingKey: stagingKey(job.name, `${time}-${crypto.randomUUID()}`, format),
    httpMetadata: httpMetadata(format, `${job.name}-${time}.${FORMATS[format].extension}`, true, encoding),
    customMetadata: ({ sha256 }) => {
      // A file that ended whole but short (an XLSX sheet cut at a row limit) is not a snapshot.
      if (exported.progress.error !== undefined) throw exported.progress.error;
      finished = new Date().toISOString();
      customMetadata = snapshotMetadata(job, { rows: exported.progress.rows, sha256, started, finished, total, ...(encoding === undefined ? {} : { decoded_bytes: exported.progress.bytes }) });
      return customMetadata;
    },
  });
  const entry: SnapshotEntry = {
    key,
    format,
    stamp: time,
    rows: exported.progress.rows,
    bytes: written.bytes,
    sha256: written.sha256,
    started,
    finished,
    query: job.description,
    total,
    ...encodingOf(encoding, exported.progress.bytes),
  };
  await publishLatest(bucket, job, entry, customMetadata);
  return entry;
}

/** What a run for `time` has left to write: formats already written are skipped (adopted into the manifest when an earlier run was cut off before recording them). */
export async function formatsDue(job: SnapshotJob, time: string, bucket: R2Bucket): Promise<{ due: FormatName[]; adopted: SnapshotEntry[]; skipped: FormatName[] }> {
  const known = await readManifest(bucket, job.name);
  const due: FormatName[] = [];
  const adopted: SnapshotEntry[] = [];
  const skipped: FormatName[] = [];
  for (const format of job.formats) {
    if (known.snapshots.some((s) => s.stamp === time && s.format === format)) {
      skipped.push(format);
      continue;
    }
    const existing = await bucket.head(datedKey(job.name, time, format));
    if (existing !== null) {
      adopted.push(entryFromObject(existing, format, time));
      skipped.push(format);
      continue;
    }
    due.push(format);
  }
  return { due, adopted, skipped };
}

/** A failed format's line in `last_run.error`: what a caller may read (the cause itself is logged). */
export function failureText(format: FormatName, error: unknown, job: string, redact: Redact): string {
  if (!(error instanceof Error && "status" in error)) log({ event: "snapshot_error", job, format, cause: String(error) }, redact);
  return redact(`${format}: ${toHttpError(error).message}`);
}

/**
 * The end of a run: its snapshots into the manifest, `last_run` set, dated snapshots past `keep`
 * deleted, one log line. Another run (a cron run and an operator's) may write the manifest meanwhile:
 * the update is a compare-and-swap, so no run's snapshots are forgotten (and so escape retention).
 */
export async function recordRun(job: SnapshotJob, started: string, result: JobResult, entries: SnapshotEntry[], deps: Pick<SnapshotDeps, "bucket" | "redact">): Promise<void> {
  const { bucket, redact } = deps;
  let old: SnapshotEntry[] = [];
  await updateManifest(bucket, job.name, (manifest) => {
    for (const entry of entries) {
      if (!manifest.snapshots.some((s) => s.key === entry.key)) manifest.snapshots.push(entry);
    }
    manifest.snapshots.sort(newestFirst);
    old = expired(manifest.snapshots, job.keep);
    manifest.snapshots = manifest.snapshots.filter((s) => !old.includes(s));
    manifest.last_run = {
      status: result.status,
      stamp: result.stamp,
      started,
      finished: new Date().toISOString(),
      ...(result.error ? { error: result.error } : {}),
    };
  });
  // Deleted only once the manifest no longer lists them.
  if (old.length > 0) await bucket.delete(old.map((s) => s.key));
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
    redact,
  );
}

/**
 * Runs one job for one scheduled time in this invocation. Idempotent: a snapshot already written for
 * this time is not written again. A failed format publishes nothing; `latest` and the manifest's list
 * keep describing the previous good snapshot, and the manifest's `last_run` says what went wrong.
 */
export async function runJob(job: SnapshotJob, scheduledTime: number, deps: SnapshotDeps): Promise<JobResult> {
  const time = stamp(scheduledTime);
  const started = new Date().toISOString();
  const { due, adopted, skipped } = await formatsDue(job, time, deps.bucket);
  const result: JobResult = { job: job.name, stamp: time, status: "ok", written: [], skipped };
  const entries: SnapshotEntry[] = [...adopted];
  const errors: string[] = [];
  for (const format of due) {
    try {
      const entry = await writeSnapshot(job, format, time, deps);
      entries.push(entry);
      result.written.push(entry);
    } catch (error) {
      const entry = (error as { entry?: SnapshotEntry }).entry;
      if (entry !== undefined) entries.push(entry);
      errors.push(failureText(format, error, job.name, deps.redact));
    }
  }
  if (errors.length > 0) Object.assign(result, { status: "failed", error: errors.join("; ") });
  await recordRun(job, started, result, entries, deps);
  return result;
}

/** The cron entry point: runs every valid job whose `cron` is this trigger's (or that has none), one at a time. */
export async function runScheduled(cron: string, scheduledTime: number, deps: SnapshotDeps): Promise<JobResult[]> {
  const { jobs, problems } = snapshotJobs(deps.config);
  for (const problem of problems) log({ event: "snapshot_config", job: problem.job, error: problem.message }, deps.redact);
  const results: JobResult[] = [];
  // One at a time: each job holds a part buffer, and memory must stay flat.
  for (const job of jobs) {
    if (job.cron !== undefined && job.cron !== cron) continue;
    try {
      results.push(await runJob(job, scheduledTime, deps));
    } catch (error) {
      log({ event: "snapshot", job: job.name, status: "failed", error: toHttpError(error).message }, deps.redact);
    }
  }
  return results;
}
