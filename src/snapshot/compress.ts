import { BlockDeflater, type DeflateState, LEVEL } from "../format/deflate.ts";
import type { FormatName } from "../query/formats.ts";
import { concatBytes } from "../rows/bytes.ts";
import type { SnapshotJob } from "./jobs.ts";

// Snapshots stored gzipped: text compresses to a quarter or less (157 MiB of CSV to 37.5), which R2
// storage and every download of it pay for. XLSX and Parquet are compressed inside already.

/** The formats a job's `"compress": "gzip"` applies to. */
const TEXT_FORMATS: ReadonlySet<FormatName> = new Set(["csv", "tsv", "json", "ndjson"]);

/** How one snapshot file of a job is stored: gzipped, or as the export's bytes (undefined). */
export const storedEncoding = (job: Pick<SnapshotJob, "compress">, format: FormatName): "gzip" | undefined =>
  job.compress === "gzip" && TEXT_FORMATS.has(format) ? "gzip" : undefined;

/** A gzip member's header (RFC 1952): deflate, no name, no time (the same bytes every run), OS unknown. */
const HEADER = Uint8Array.of(0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff);

/**
 * A gzipped file written in pieces (see format/deflate.ts): the header, the deflated bytes, and the
 * trailer (CRC-32 and size) once the export has ended. Between a snapshot's write steps it carries
 * the deflater's state alone, so each step's CPU and memory are a step's, whatever the file's size.
 */
export class GzipFile {
  readonly #deflater: BlockDeflater;

  constructor(from?: DeflateState) {
    this.#deflater = new BlockDeflater(LEVEL.default, from);
  }

  /** The file's first bytes. */
  begin(): Uint8Array {
    return HEADER;
  }

  /** The bytes to store for one chunk of the export's (maybe none yet). */
  write(chunk: Uint8Array): Uint8Array {
    return this.#deflater.write(chunk);
  }

  /** What the next step goes on from. */
  save(): DeflateState {
    return this.#deflater.save();
  }

  /** The file's last bytes: the deflate stream's end and the trailer. */
  end(): Uint8Array {
    const deflated = this.#deflater.end();
    const trailer = new Uint8Array(8);
    const view = new DataView(trailer.buffer);
    view.setUint32(0, this.#deflater.crc, true);
    view.setUint32(4, this.#deflater.size % 2 ** 32, true);
    return concatBytes([deflated, trailer]);
  }
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
