import type { FormatName } from "../query/formats.ts";
import type { SnapshotJob } from "./jobs.ts";

// Snapshots stored gzipped: text compresses to a quarter or less (157 MiB of CSV to 37.5), which R2
// storage and every download of it pay for. XLSX and Parquet are compressed inside already.

/** The formats a job's `"compress": "gzip"` applies to. */
const TEXT_FORMATS: ReadonlySet<FormatName> = new Set(["csv", "tsv", "json", "ndjson"]);

/** How one snapshot file of a job is stored: gzipped, or as the export's bytes (undefined). */
export const storedEncoding = (job: Pick<SnapshotJob, "compress">, format: FormatName): "gzip" | undefined =>
  job.compress === "gzip" && TEXT_FORMATS.has(format) ? "gzip" : undefined;

/**
 * The bytes to store: the export's, gzipped by the runtime's own CompressionStream (zlib, native)
 * when the job asks for it. Backpressure passes through, so memory stays flat as before.
 */
export function storedBody(body: ReadableStream<Uint8Array>, encoding: "gzip" | undefined): ReadableStream<Uint8Array> {
  if (encoding === undefined) return body;
  return body.pipeThrough(new CompressionStream("gzip"));
}

/** Whether a request's Accept-Encoding takes gzip (`gzip`, `x-gzip` or `*`, with a q above 0). */
export function acceptsGzip(header: string | null): boolean {
  if (header === null) return false;
  let gzip: boolean | undefined;
  let star = false;
  for (const part of header.split(",")) {
    const [name = "", ...params] = part.trim().toLowerCase().split(";");
    const q = params.map((p) => /^\s*q\s*=\s*([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    const accepted = q === undefined || Number(q) > 0;
    if (name === "gzip" || name === "x-gzip") gzip = gzip === true || accepted;
    else if (name === "*") star = accepted;
  }
  return gzip ?? star;
}
