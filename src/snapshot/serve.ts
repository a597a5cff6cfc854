import type { Config } from "../config/config.ts";
import { bindingError, HttpError } from "../errors.ts";
import { FORMATS } from "../query/formats.ts";
import { snapshotJobs, type SnapshotJob } from "./jobs.ts";
import { datedKey, latestKey, manifestKey, parseSnapshotFile, stampTime } from "./keys.ts";
import { readManifest } from "./manifest.ts";
import { conditionalAnswer, ifRangeHolds } from "../protocol/conditional.ts";
import { parseRange } from "../protocol/range.ts";
import { acceptsGzip } from "./compress.ts";
import { runningRun } from "./runs.ts";
import type { RunParams } from "./workflow.ts";

export function bucketOf(bucket: R2Bucket | undefined): R2Bucket {
  if (bucket === undefined) {
    throw bindingError("SNAPSHOTS", "the R2 bucket", "[[r2_buckets]]");
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
          ...(entry.encoding === undefined ? {} : { encoding: entry.encoding, decoded_bytes: entry.decoded_bytes }),
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
        last_run: manifest.last_run,
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
export async function serveSnapshotFile(request: Request, name: string, fileName: string, config: Config, bucket: R2Bucket): Promise<Response> {
  const job = findJob(config, name);
  const file = parseSnapshotFile(fileName);
  const notFound = new HttpError(404, `No snapshot ${fileName.slice(0, 64)} for job ${job.name}.`);
  if (file === undefined || (file.kind !== "manifest" && !job.formats.includes(file.format))) throw notFound;
  const key =
    file.kind === "manifest" ? manifestKey(job.name) : file.kind === "latest" ? latestKey(job.name, file.format) : datedKey(job.name, file.stamp, file.format);

  const head = await bucket.head(key);
  if (head === null) throw notFound;
  const gzip = gzipRepresentation(head, clientAcceptEncoding(request));
  // The decoded representation of a gzipped file has a validator of its own.
  const etag = gzip.decoded ? decodedEtag(head.httpEtag) : head.httpEtag;
  const out = new Headers();
  head.writeHttpMetadata(out);
  out.set("etag", etag);
  out.set("last-modified", head.uploaded.toUTCString());
  out.set("accept-ranges", gzip.decoded ? "none" : "bytes");
  if (gzip.stored) out.set("vary", "accept-encoding");
  if (gzip.decoded) out.delete("content-encoding");
  const conditional = conditionalAnswer(request, out);
  if (conditional !== undefined) return conditional;
  // A gzipped file decoded on the fly has no byte offsets to serve a range of: it goes whole.
  const range =
    !gzip.decoded && ifRangeHolds(request, { etag, lastModified: head.uploaded }) ? parseRange(request.headers.get("range"), head.size) : ({ kind: "whole" } as const);
  if (range.kind === "unsatisfiable") {
    out.delete("content-type");
    out.set("content-range", `bytes */${head.size}`);
    return new Response(null, { status: 416, headers: out });
  }
  if (range.kind === "part") {
    out.set("content-range", `bytes ${range.offset}-${range.offset + range.length - 1}/${head.size}`);
    out.set("content-length", String(range.length));
  } else if (!gzip.decoded) {
    out.set("content-length", String(head.size));
  }
  const status = range.kind === "part" ? 206 : 200;
  if (request.method === "HEAD") return new Response(null, { status, headers: out });
  // The object the validators were judged on, or none: a `latest` replaced meanwhile must not be
  // sent under the old one's ETag.
  const object = await bucket.get(key, { onlyIf: { etagMatches: head.etag }, ...(range.kind === "part" ? { range: { offset: range.offset, length: range.length } } : {}) });
  if (object === null) throw notFound;
  if (!("body" in object)) {
    throw new HttpError(503, "The snapshot was replaced while it was being read; try again.", { headers: { "retry-after": "1" } });
  }
  if (gzip.decoded) return new Response(object.body.pipeThrough(new DecompressionStream("gzip")), { status, headers: out });
  // Stored gzip bytes go out as they are: without "manual", the runtime would gzip them again.
  return new Response(object.body, { status, headers: out, ...(gzip.stored ? { encodeBody: "manual" as const } : {}) });
}

/**
 * The client's own Accept-Encoding: Cloudflare rewrites the header before the worker sees it (to
 * `gzip, br` whatever the client sent) and keeps the client's in `cf.clientAcceptEncoding`.
 */
function clientAcceptEncoding(request: Request): string | null {
  const cf = (request as { cf?: { clientAcceptEncoding?: unknown } }).cf;
  return typeof cf?.clientAcceptEncoding === "string" ? cf.clientAcceptEncoding : request.headers.get("accept-encoding");
}

/** The decoded representation of a gzipped snapshot has its own validator, told apart from the stored bytes'. */
const decodedEtag = (etag: string): string => etag.replace(/"$/, '-gunzip"');

/** How a snapshot is sent: a gzipped one (`stored`) as its gzip bytes to a client that accepts gzip, else decoded on the fly (`decoded`). */
function gzipRepresentation(head: R2Object, acceptEncoding: string | null): { stored: boolean; decoded: boolean } {
  const stored = head.httpMetadata?.contentEncoding === "gzip";
  return { stored, decoded: stored && !acceptsGzip(acceptEncoding) };
}
