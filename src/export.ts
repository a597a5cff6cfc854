import type { CkanClient } from "./ckan/client.ts";
import { openTable, type Table } from "./ckan/pages.ts";
import type { Config } from "./config.ts";
import { HttpError, toHttpError } from "./errors.ts";
import { csvPassthrough } from "./format/csv-passthrough.ts";
import { FORMATS } from "./format/index.ts";
import type { PassthroughFactory } from "./format/types.ts";
import type { ExportQuery } from "./query.ts";
import { encodeTable, toByteStream } from "./stream.ts";

/** Live counters of one export, final once its byte stream has ended. */
export interface ExportProgress {
  rows: number;
  bytes: number;
  error?: HttpError;
}

export interface ExportRun {
  /** Headers that describe the export (type, download name, total). */
  headers: Headers;
  table: Pick<Table, "total" | "expectedRows" | "firstPageRows">;
  body: ReadableStream<Uint8Array>;
  progress: ExportProgress;
}

/**
 * CSV with the standard comma can take CKAN's own CSV pages and rewrite them (far cheaper than
 * parsing every value and writing it again); other delimiters and formats encode rows.
 */
function passthroughFor(query: ExportQuery, config: Config): { passthrough: PassthroughFactory } | undefined {
  if (!config.csvPassthrough || query.format !== "csv" || query.csv.delimiter !== ",") return undefined;
  return { passthrough: (incoming, dropFrom) => csvPassthrough(incoming, dropFrom, query.csv.formulaGuard) };
}

/** `attachment` with an ASCII fallback name and the exact UTF-8 name (RFC 6266 / RFC 8187). */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, "_").replace(/["\\]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

/**
 * The export pipeline up to bytes: first page, encoder, byte stream. Shared by every sink (HTTP
 * response, R2 snapshot). Throws an HttpError when the first page fails.
 */
export async function runExport(
  query: ExportQuery,
  config: Config,
  client: CkanClient,
  onDone?: (progress: ExportProgress) => void,
): Promise<ExportRun> {
  const format = FORMATS[query.format];
  const abort = new AbortController();
  const table = await openTable(client, config.datastoreSearchUrl, query, {
    pageSize: config.pageSize,
    maxRows: config.maxRows,
    concurrency: config.upstreamConcurrency,
    ...(passthroughFor(query, config) ?? {}),
    signal: abort.signal,
  });
  const encoder = format.encoder(table.columns, query.csv);
  const progress: ExportProgress = { rows: 0, bytes: 0 };
  const body = toByteStream(encodeTable(table, encoder, progress), {
    failure: (reason) => encoder.failure(reason),
    cancel: () => abort.abort(),
    done: (outcome) => {
      progress.bytes = outcome.bytes;
      if (outcome.error) progress.error = outcome.error;
      onDone?.(progress);
    },
  });
  const headers = new Headers({
    "content-type": format.contentType,
    "content-disposition": contentDisposition(query.filename),
    "x-content-type-options": "nosniff",
  });
  if (table.total !== undefined) headers.set("x-total-count", String(table.total));
  return { headers, table, body, progress };
}

function concat(chunks: Uint8Array[], length: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

/** An export either read whole (small: it gets Content-Length, an ETag, the cache) or streaming. */
export type ExportBody =
  | { whole: Uint8Array<ArrayBuffer> }
  /** `estimate`: the whole export's expected size in bytes, from its first page (Infinity: unknown). */
  | { stream: ReadableStream<Uint8Array>; estimate: number };

/**
 * An export expected to fit in `bufferBytes` is read whole first, so an upstream failure still
 * becomes a proper error status (thrown here). A larger one is streamed as soon as its first page is
 * encoded: its first byte should not wait for a buffer to fill.
 */
export async function readBody(run: ExportRun, bufferBytes: number): Promise<ExportBody> {
  const { body, table } = run;
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  let estimate = Number.POSITIVE_INFINITY;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { whole: concat(chunks, length) };
      chunks.push(value);
      length += value.byteLength;
      if (chunks.length === 1 && table.firstPageRows > 0 && table.expectedRows !== undefined) {
        estimate = (value.byteLength / table.firstPageRows) * table.expectedRows;
        if (estimate > bufferBytes) break;
      }
      if (length > bufferBytes) break;
    }
  } catch (error) {
    throw toHttpError(error);
  }
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const buffered = chunks.shift();
        if (buffered !== undefined) return controller.enqueue(buffered);
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  return { stream, estimate: Math.max(estimate, length) };
}
