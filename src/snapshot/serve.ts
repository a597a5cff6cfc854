import type { IRequest } from "itty-router";
import type { Config } from "../config/config.ts";
import { configError, HttpError, requireGetOrHead } from "../errors.ts";
import { FORMATS } from "../query/formats.ts";
import { snapshotJobs, type SnapshotJob } from "./jobs.ts";
import { datedKey, latestKey, manifestKey, parseSnapshotFile, stampTime } from "./keys.ts";
import { readManifest } from "./manifest.ts";
import { runningRun } from "./runs.ts";
import type { RunParams } from "./workflow.ts";
import { ifRangeHolds, parseRange } from "../protocol/range.ts";

export function bucketOf(bucket: R2Bucket | undefined): R2Bucket {
  if (bucket === undefined) {
    throw configError("SNAPSHOTS", "(the R2 bucket binding) is missing");
  }
  return bucket;
}

export function findJob(config: Config, name: string): SnapshotJob {
  const job = snapshotJobs(config).jobs.find((j) => j.name === name);
  if (job === undefined) throw new HttpError(404, `No snapshot job is named "${name.slice(0, 64)}". GET /snapshots lists them.`);
  return job;
}

/**
 * GET /snapshots: every job, its latest snapshot per format with links, and the jobs that were
 * skipped; with the snapshot Workflow bound (`runs`), each job's run in progress too (`running`).
 */
export async function listSnapshots(config: Config, bucket: R2Bucket, link: (path: string) => Promise<string>, runs?: Workflow<RunParams>): Promise<Response> {
  const jobs = await Promise.all(
    snapshotJobs(config).jobs.map(async (job) => {
      const manifest = await readManifest(bucket, job.name);
      const latest: Record<string, unknown> = {};
      for (const format of job.formats) {
        const entry = manifest.snapshots.find((s) => s.format === format);
        if (entry === undefined) continue;
        latest[format] = {
          time: new Date(stampTime(entry.stamp)).toISOString(),
          rows: entry.rows,
          bytes: entry.bytes,
          sha256: entry.sha256,
          url: await link(`/snapshots/${job.name}/latest.${FORMATS[format].extension}`),
          dated_url: await link(`/snapshots/${job.name}/${entry.stamp}.${FORMATS[format].extension}`),
        };
      }
      return {
        name: job.name,
        cron: job.cron ?? null,
        formats: job.formats,
        keep: job.keep,
        query: job.description,
        latest,
        last_run: manifest.lastRun,
        ...(runs === undefined ? {} : { running: (await runningRun(job.name, bucket, runs)) ?? null }),
        manifest: await link(`/snapshots/${job.name}/manifest.json`),
      };
    }),
  );
  return Response.json({ jobs, problems: snapshotJobs(config).problems }, { headers: { "cache-control": "no-cache" } });
}

/**
 * GET|HEAD /snapshots/<name>/<file>: streamed from R2 with validators, so a dashboard re-fetching a
 * snapshot gets a 304, and a client resuming a download gets a 206.
 */
export async function serveSnapshotFile(request: IRequest, config: Config, bucket: R2Bucket): Promise<Response> {
  requireGetOrHead(request.method, "Snapshots");
  const job = findJob(config, String(request.params.name));
  const file = parseSnapshotFile(String(request.params.file));
  const notFound = new HttpError(404, `No snapshot ${String(request.params.file).slice(0, 64)} for job ${job.name}.`);
  if (file === undefined || (file.kind !== "manifest" && !job.formats.includes(file.format))) throw notFound;
  const key =
    file.kind === "manifest" ? manifestKey(job.name) : file.kind === "latest" ? latestKey(job.name, file.format) : datedKey(job.name, file.stamp, file.format);

  const head = await bucket.head(key);
  if (head === null) throw notFound;
  const range = ifRangeHolds(request.headers.get("if-range"), head.httpEtag, head.uploaded)
    ? parseRange(request.headers.get("range"), head.size)
    : ({ kind: "whole" } as const);
  // Preconditions (If-None-Match, If-Match, If-Modified-Since...) are R2's to judge; the range is ours.
  const object = await bucket.get(key, {
    onlyIf: new Headers(request.headers),
    // Unsatisfiable: the body (an empty file's too) is never read, only the preconditions are judged.
    ...(range.kind === "part" ? { range: { offset: range.offset, length: range.length } } : {}),
  });
  if (object === null) throw notFound;
  const out = new Headers();
  object.writeHttpMetadata(out);
  out.set("etag", object.httpEtag);
  out.set("last-modified", object.uploaded.toUTCString());
  out.set("accept-ranges", "bytes");
  if (!("body" in object)) {
    // The precondition held back the body: If-None-Match matched (304) or If-Match/Unmodified-Since failed (412).
    const notModified = request.headers.has("if-none-match") || request.headers.has("if-modified-since");
    return new Response(null, { status: notModified ? 304 : 412, headers: out });
  }
  if (object.etag !== head.etag) {
    await object.body.cancel();
    throw new HttpError(503, "The snapshot was replaced while it was being read; try again.", { headers: { "retry-after": "1" } });
  }
  if (range.kind === "unsatisfiable") {
    await object.body.cancel();
    out.delete("content-type");
    out.set("content-range", `bytes */${object.size}`);
    return new Response(null, { status: 416, headers: out });
  }
  if (range.kind === "part") {
    out.set("content-range", `bytes ${range.offset}-${range.offset + range.length - 1}/${object.size}`);
    out.set("content-length", String(range.length));
  } else {
    out.set("content-length", String(object.size));
  }
  const status = range.kind === "part" ? 206 : 200;
  if (request.method === "HEAD") {
    await object.body.cancel();
    return new Response(null, { status, headers: out });
  }
  return new Response(object.body, { status, headers: out });
}
