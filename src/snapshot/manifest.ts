import type { FormatName } from "../format/index.ts";
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
  lastRun: LastRun | null;
}

export async function readManifest(bucket: R2Bucket, job: string): Promise<Manifest> {
  const object = await bucket.get(manifestKey(job));
  if (object === null) return { job, snapshots: [], lastRun: null };
  return (await object.json()) as Manifest;
}

export async function writeManifest(bucket: R2Bucket, manifest: Manifest): Promise<void> {
  await bucket.put(manifestKey(manifest.job), JSON.stringify(manifest, null, 2), {
    httpMetadata: { contentType: "application/json; charset=utf-8", cacheControl: "no-cache" },
  });
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

export const newestFirst = (a: SnapshotEntry, b: SnapshotEntry): number => (a.stamp < b.stamp ? 1 : a.stamp > b.stamp ? -1 : 0);
