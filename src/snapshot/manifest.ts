import type { FormatName } from "../query/formats.ts";
import { manifestKey } from "./keys.ts";

/** One kept snapshot, as `manifest.json` lists it. */
export interface SnapshotEntry {
  key: string;
  format: FormatName;
  stamp: string;
  rows: number;
  bytes: number;
  sha256: string;
  started: string;
  finished: string;
  query: Record<string, unknown>;
  /** CKAN's count of matching rows at the time, before limit/offset. */
  total: number | null;
  /**
   * `gzip`: the file is stored gzipped, and `bytes` and `sha256` are those of the stored gzip file
   * (what a client sending `Accept-Encoding: gzip` receives); `decoded_bytes` is the export's size.
   */
  encoding?: "gzip";
  decoded_bytes?: number;
}

export interface LastRun {
  status: "ok" | "failed";
  stamp: string;
  started: string;
  finished: string;
  error?: string;
}

export interface Manifest {
  job: string;
  /** Newest first. */
  snapshots: SnapshotEntry[];
  last_run: LastRun | null;
}

export async function readManifest(bucket: R2Bucket, job: string): Promise<Manifest> {
  const object = await bucket.get(manifestKey(job));
  if (object === null) return { job, snapshots: [], last_run: null };
  return fromStored(await object.json());
}

/** A manifest as stored; one written before `last_run` had its snake_case name says `lastRun`. */
function fromStored(stored: unknown): Manifest {
  const manifest = stored as Manifest & { lastRun?: LastRun | null };
  if (manifest.last_run === undefined) manifest.last_run = manifest.lastRun ?? null;
  delete manifest.lastRun;
  return manifest;
}

/**
 * Read, change, write back only if nobody wrote in between (R2's conditional put), else again: two
 * runs of a job that overlap both end up in the manifest.
 */
export async function updateManifest(
  bucket: R2Bucket,
  job: string,
  change: (manifest: Manifest) => void,
): Promise<Manifest> {
  for (let attempt = 0; attempt < 8; attempt++) {
    const object = await bucket.get(manifestKey(job));
    const manifest: Manifest =
      object === null ? { job, snapshots: [], last_run: null } : fromStored(await object.json());
    change(manifest);
    const written = await bucket.put(manifestKey(job), JSON.stringify(manifest, null, 2), {
      httpMetadata: { contentType: "application/json; charset=utf-8", cacheControl: "no-cache" },
      onlyIf: object === null ? { etagDoesNotMatch: "*" } : { etagMatches: object.etag },
    });
    if (written !== null) return manifest;
    await scheduler.wait(20 + Math.random() * 80 * (attempt + 1));
  }
  throw new Error(`the manifest of ${job} kept changing under this run`);
}

/** Entries beyond `keep` per format, oldest last: these are deleted, never `latest` or the manifest. */
export function expired(snapshots: SnapshotEntry[], keep: number): SnapshotEntry[] {
  const perFormat = new Map<FormatName, number>();
  return snapshots.filter((entry) => {
    const n = (perFormat.get(entry.format) ?? 0) + 1;
    perFormat.set(entry.format, n);
    return n > keep;
  });
}

export const newestFirst = (a: SnapshotEntry, b: SnapshotEntry): number =>
  a.stamp < b.stamp ? 1 : a.stamp > b.stamp ? -1 : 0;
