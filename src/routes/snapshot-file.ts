import { HttpError } from "../errors.ts";
import { conditionalAnswer, ifRangeHolds } from "../protocol/conditional.ts";
import { parseRange } from "../protocol/range.ts";
import { contentDisposition } from "../query/filename.ts";
import { acceptsGzip } from "../snapshot/compress.ts";
import type { SnapshotObject } from "../snapshot/serve.ts";

/**
 * GET|HEAD of a snapshot file: streamed from R2 with validators, so a dashboard re-fetching a
 * snapshot gets a 304, and a client resuming a download gets a 206. `latest` is the newest dated
 * file sent under the job's own name (its short cache life is the route's cache policy).
 */
export async function snapshotFileResponse(
  request: Request,
  target: SnapshotObject,
  bucket: R2Bucket,
  notFound: HttpError,
): Promise<Response> {
  const { key } = target;
  const head = await bucket.head(key);
  if (head === null) throw notFound;
  const gzip = gzipRepresentation(head, clientAcceptEncoding(request));
  // The decoded representation of a gzipped file has a validator of its own.
  const etag = gzip.decoded ? decodedEtag(head.httpEtag) : head.httpEtag;
  const out = new Headers();
  head.writeHttpMetadata(out);
  if (target.latest !== undefined) out.set("content-disposition", contentDisposition(target.latest.filename));
  out.set("etag", etag);
  out.set("last-modified", head.uploaded.toUTCString());
  out.set("accept-ranges", gzip.decoded ? "none" : "bytes");
  if (gzip.stored) out.set("vary", "accept-encoding");
  if (gzip.decoded) out.delete("content-encoding");
  const conditional = conditionalAnswer(request, out);
  if (conditional !== undefined) return conditional;
  // A gzipped file decoded on the fly has no byte offsets to serve a range of: it goes whole.
  const range =
    !gzip.decoded && ifRangeHolds(request, { etag, lastModified: head.uploaded })
      ? parseRange(request.headers.get("range"), head.size)
      : ({ kind: "whole" } as const);
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
  // The object the validators were judged on, or none: a manifest replaced meanwhile must not be
  // sent under the old one's ETag.
  const object = await bucket.get(key, {
    onlyIf: { etagMatches: head.etag },
    ...(range.kind === "part" ? { range: { offset: range.offset, length: range.length } } : {}),
  });
  if (object === null) throw notFound;
  if (!("body" in object)) {
    throw new HttpError(503, "The snapshot was replaced while it was being read; try again.", {
      headers: { "retry-after": "1" },
    });
  }
  if (gzip.decoded)
    return new Response(object.body.pipeThrough(new DecompressionStream("gzip")), { status, headers: out });
  // Stored gzip bytes go out as they are: without "manual", the runtime would gzip them again.
  return new Response(object.body, { status, headers: out, ...(gzip.stored ? { encodeBody: "manual" as const } : {}) });
}

/**
 * The client's own Accept-Encoding: Cloudflare rewrites the header before the worker sees it (to
 * `gzip, br` whatever the client sent) and keeps the client's in `cf.clientAcceptEncoding`.
 */
function clientAcceptEncoding(request: Request): string | null {
  const cf = (request as { cf?: { clientAcceptEncoding?: unknown } }).cf;
  return typeof cf?.clientAcceptEncoding === "string"
    ? cf.clientAcceptEncoding
    : request.headers.get("accept-encoding");
}

/** The decoded representation of a gzipped snapshot has its own validator, told apart from the stored bytes'. */
const decodedEtag = (etag: string): string => etag.replace(/"$/, '-gunzip"');

/** How a snapshot is sent: a gzipped one (`stored`) as its gzip bytes to a client that accepts gzip, else decoded on the fly (`decoded`). */
function gzipRepresentation(head: R2Object, acceptEncoding: string | null): { stored: boolean; decoded: boolean } {
  const stored = head.httpMetadata?.contentEncoding === "gzip";
  return { stored, decoded: stored && !acceptsGzip(acceptEncoding) };
}
