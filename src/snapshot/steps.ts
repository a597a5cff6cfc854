import { PermanentFailure } from "../errors.ts";
import { own, release } from "../rows/owned-bytes.ts";
import { PartBuffer } from "./part-buffer.ts";
import { siteFor } from "../ckan/site.ts";
import type { Resume } from "../ckan/table.ts";
import { openExportPart } from "../export/pipeline.ts";
import { FORMATS, type FormatName } from "../query/formats.ts";
import { hex } from "../protocol/conditional.ts";
import type { SnapshotJob } from "./jobs.ts";
import { carryKey, datedKey, stagingKey } from "./keys.ts";
import type { SnapshotEntry } from "./manifest.ts";
import { updateRunRecord } from "./run-record.ts";
import { copyObject } from "./r2-writer.ts";
import { httpMetadata, publishLatest, snapshotMetadata, type SnapshotDeps } from "./run.ts";

/** R2's most parts per upload: with equal parts this bounds the largest snapshot. */
export const MAX_PARTS = 10_000;

/** One format of one run, as every step of it sees it. */
export interface FormatRun {
  job: SnapshotJob;
  format: FormatName;
  stamp: string;
  /** When the run started (the claim step's time: the same in every replay). */
  started: string;
  instance: string;
}

/**
 * What a write step hands the next: small whatever the table's size (a cursor, this step's part
 * etags, counters), so a retried step starts from exactly the same point and writes the same bytes.
 * The bytes past the last whole part are in a staging object (`carry`), not here: a step result is
 * at most 1 MiB.
 */
export interface PartsState {
  /** The multipart upload at the staging key, once a part was filled. */
  upload: { key: string; id: string } | null;
  /** The parts this step uploaded (the run joins every step's for `complete`). */
  parts: { partNumber: number; etag: string }[];
  partCount: number;
  rows: number;
  bytes: number;
  /** The staging object holding the bytes that did not fill a part, and their count. */
  carry: { key: string; bytes: number } | null;
  resume: Resume | null;
  /** The columns' ids and types, hashed: a table whose columns change during a run fails it. */
  columns: string;
  total: number | null;
  ended: boolean;
  /** A file that ended within its first part: this step wrote it whole to its dated key. */
  written: { sha256: string; finished: string } | null;
}

/**
 * One step of a format: the export goes on from where the last step stopped, fills parts of the
 * multipart upload, and stops at a page's end once it has written SNAPSHOT_STEP_BYTES. The parts it
 * uploads have fixed numbers, so a retry overwrites its own parts and nothing else.
 */
export async function writeStep(run: FormatRun, prev: PartsState | null, step: number, deps: SnapshotDeps): Promise<PartsState> {
  const { bucket, config } = deps;
  const partBytes = config.snapshotPartBytes;
  const query = run.job.queries[run.format]!;
  let produced = 0;
  const part = await openExportPart(query, config, siteFor(config, deps.upstreamFetch), prev?.resume ?? undefined, () => produced >= config.snapshotStepBytes);
  const columns = await fingerprint(part.columns);
  if (prev !== null && columns !== prev.columns) {
    await part.chunks.return();
    throw new PermanentFailure("The table's columns changed while the snapshot was being written; the next run starts again.");
  }

  const staging = stagingKey(run.job.name, run.stamp, run.format);
  let upload = prev?.upload ?? null;
  const parts: PartsState["parts"] = [];
  let partCount = prev?.partCount ?? 0;
  let carried: Uint8Array | undefined;
  if (prev?.carry) {
    const object = await bucket.get(prev.carry.key);
    if (object === null) throw new Error(`the carried bytes of step ${step - 1} are missing`);
    carried = new Uint8Array(await object.arrayBuffer());
    if (carried.byteLength !== prev.carry.bytes) throw new Error(`the carried bytes of step ${step - 1} are incomplete`);
  }
  const buffer = new PartBuffer(partBytes, carried);
  const uploadPart = async (bytes: Uint8Array): Promise<void> => {
    if (partCount >= MAX_PARTS) throw new PermanentFailure(`The snapshot is larger than ${MAX_PARTS} parts of ${partBytes} bytes (SNAPSHOT_PART_BYTES).`);
    if (upload === null) {
      const created = await bucket.createMultipartUpload(staging, { httpMetadata: httpMetadata(run.format, `${run.job.name}-${run.stamp}.${FORMATS[run.format].extension}`, true) });
      upload = { key: staging, id: created.uploadId };
      const held = upload;
      await updateRunRecord(bucket, run.job.name, run.instance, (record) => {
        record.upload = held;
      });
    }
    const uploaded = await bucket.resumeMultipartUpload(upload.key, upload.id).uploadPart(partCount + 1, bytes);
    parts.push({ partNumber: uploaded.partNumber, etag: uploaded.etag });
    partCount++;
  };

  const utf8 = new TextEncoder();
  for await (const chunk of part.chunks) {
    const bytes = typeof chunk === "string" ? own(utf8.encode(chunk)) : chunk;
    produced += bytes.byteLength;
    await buffer.add(bytes, uploadPart);
    // Copied into its part: freed now, as the R2 writer and the HTTP sink free theirs (see owned-bytes.ts).
    release(bytes);
  }

  const ended = part.ended();
  const rows = (prev?.rows ?? 0) + part.progress.rows;
  const bytes = (prev?.bytes ?? 0) + produced;
  const total = prev?.total ?? part.resumeAt().total ?? null;
  let carry: PartsState["carry"] = null;
  let written: PartsState["written"] = null;
  if (ended && upload === null) {
    // Smaller than a part: one put, straight to its dated key, with its final metadata.
    const body = buffer.held();
    const sha256 = hex(await crypto.subtle.digest("SHA-256", body));
    const finished = new Date().toISOString();
    await bucket.put(datedKey(run.job.name, run.stamp, run.format), body, {
      httpMetadata: httpMetadata(run.format, `${run.job.name}-${run.stamp}.${FORMATS[run.format].extension}`, true),
      customMetadata: snapshotMetadata(run.job, { rows, sha256, started: run.started, finished, total }),
    });
    written = { sha256, finished };
  } else if (ended) {
    if (buffer.held().byteLength > 0) await buffer.flush(uploadPart);
  } else if (buffer.held().byteLength > 0) {
    carry = { key: carryKey(staging, step), bytes: buffer.held().byteLength };
    await bucket.put(carry.key, buffer.held());
  }
  // The step before the last is done for good: its carried bytes are read by nobody any more.
  if (step > 2) await bucket.delete(carryKey(staging, step - 2));

  const state: PartsState = { upload, parts, partCount, rows, bytes, carry, resume: ended ? null : part.resumeAt(), columns, total, ended, written };
  await updateRunRecord(bucket, run.job.name, run.instance, (record) => {
    Object.assign(record, { format: run.format, step, rows, bytes, parts: partCount });
  });
  return state;
}

/** The columns as the file is written from them: ids and types, which every step must see the same. */
async function fingerprint(columns: { id: string; type: string }[]): Promise<string> {
  const text = JSON.stringify(columns.map((c) => [c.id, c.type]));
  return hex(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

/**
 * The upload assembled at its staging key and hashed (R2 has the bytes; no step kept a hash state).
 * Run again after it succeeded, it finds the assembled object and only hashes it.
 */
export async function sealParts(last: PartsState, parts: PartsState["parts"], deps: SnapshotDeps): Promise<{ sha256: string; bytes: number }> {
  const { bucket } = deps;
  const { upload } = last;
  if (upload === null) throw new Error("no upload to seal");
  if ((await bucket.head(upload.key)) === null) await bucket.resumeMultipartUpload(upload.key, upload.id).complete(parts);
  const object = await bucket.get(upload.key);
  if (object === null) throw new Error(`the assembled snapshot ${upload.key} vanished`);
  const digest = new crypto.DigestStream("SHA-256");
  await object.body.pipeTo(digest);
  if (object.size !== last.bytes) throw new Error(`the assembled snapshot holds ${object.size} bytes, not the ${last.bytes} written`);
  return { sha256: hex(await digest.digest), bytes: object.size };
}

/**
 * The whole file under its dated key with its final metadata, then `latest`: the staging object is
 * copied (R2 has no server-side copy) and deleted. Run again, it copies again: the same bytes.
 */
export async function publishParts(run: FormatRun, last: PartsState, sealed: { sha256: string; bytes: number } | null, deps: SnapshotDeps): Promise<SnapshotEntry> {
  const { bucket } = deps;
  const key = datedKey(run.job.name, run.stamp, run.format);
  const sha256 = sealed?.sha256 ?? last.written?.sha256 ?? "";
  const finished = last.written?.finished ?? new Date().toISOString();
  const entry: SnapshotEntry = {
    key,
    format: run.format,
    stamp: run.stamp,
    rows: last.rows,
    bytes: last.bytes,
    sha256,
    started: run.started,
    finished,
    query: run.job.description,
    total: last.total,
  };
  const customMetadata = snapshotMetadata(run.job, entry);
  if (last.upload !== null) {
    if ((await bucket.head(last.upload.key)) !== null) {
      await copyObject(bucket, last.upload.key, key, {
        httpMetadata: httpMetadata(run.format, `${run.job.name}-${run.stamp}.${FORMATS[run.format].extension}`, true),
        customMetadata,
      });
    }
    await deleteStaging(bucket, run);
  }
  await publishLatest(bucket, run.job, entry, customMetadata);
  return entry;
}

/** Everything a format of a run left under `.staging/`: the assembled object and carried bytes. */
async function deleteStaging(bucket: R2Bucket, run: FormatRun): Promise<void> {
  const prefix = stagingKey(run.job.name, run.stamp, run.format);
  for (;;) {
    const listed = await bucket.list({ prefix });
    if (listed.objects.length > 0) await bucket.delete(listed.objects.map((o) => o.key));
    if (!listed.truncated) return;
  }
}

/** A format that failed for good (or was cancelled): its upload aborted, its staging objects gone. */
export async function abandonFormat(run: FormatRun, upload: { key: string; id: string } | null, deps: Pick<SnapshotDeps, "bucket">): Promise<void> {
  if (upload !== null) await deps.bucket.resumeMultipartUpload(upload.key, upload.id).abort().catch(() => {});
  await deleteStaging(deps.bucket, run);
}
