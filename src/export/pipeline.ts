import type { CkanSite } from "../ckan/site.ts";
import { admitExport, type Admission } from "../ckan/page-budget.ts";
import { describeTable, openTable, type PagingOptions, type Resume, type Table } from "../ckan/table.ts";
import type { Config } from "../config/config.ts";
import { ExportLimit, type HttpError } from "../errors.ts";
import type { Batch, PassthroughFactory, RecordsReader } from "../rows/batch.ts";
import { csvRecordsReader } from "../format/csv-passthrough.ts";
import { CsvRecordsStream, RowEndGuesses } from "../format/csv-records.ts";
import { jsonCsvReader } from "../format/json-from-csv.ts";
import { parquetCsvReader } from "../format/parquet-from-csv.ts";
import { xlsxCsvReader } from "../format/xlsx-from-csv.ts";
import { type Closing, closingFor, encoderFor, ENCODERS } from "../format/index.ts";
import type { Encoder, EncoderCarry } from "../format/types.ts";
import { encodeTable, MIN_BYTES_PER_SECOND, toByteStream, type ByteStreamHooks } from "./byte-stream.ts";
import { primed, touching, withinSize } from "./chunks.ts";
import { packing } from "./container.ts";
import type { ExportQuery } from "../query/export-query.ts";

/** The settings the pipeline reads: page sizes, the upstream budget, which pass-throughs are on. */
export type ExportSettings = Pick<
  Config,
  "pageSize" | "subrequestLimit" | "upstreamConcurrency" | "csvPassthrough" | "jsonPassthrough" | "stallSeconds"
>;

/** Live counters of one export, final once its byte stream has ended. */
export interface ExportProgress {
  rows: number;
  /** Characters encoded so far (before a container such as XLSX's ZIP compresses them). */
  chars: number;
  bytes: number;
  error?: HttpError;
}

export interface OpenExport {
  table: Pick<Table, "total" | "expectedRows" | "firstPageRows" | "columns">;
  /** The bytes are a container's (XLSX's ZIP): their first chunk says nothing of a row's size. */
  packed: boolean;
  body: ReadableStream<Uint8Array>;
  progress: ExportProgress;
  /** Headers this kind of answer adds (an aggregate's `X-Aggregated-By`). */
  headers?: Record<string, string>;
}

/** CKAN's CSV pages read by `reader`'s readers, whole or as their answers arrive (one export's guesses of row ends: csv-records.ts). */
function csvPages(reader: () => RecordsReader): ReturnType<PassthroughFactory> {
  const guess = new RowEndGuesses();
  return {
    recordsFormat: "csv",
    read: reader(),
    stream: () => new CsvRecordsStream(reader(), { guess }),
  };
}

/**
 * CSV and TSV (any delimiter) with the decimal point take CKAN's own CSV pages and rewrite them (far
 * cheaper than parsing every value and writing it again, and no JavaScript string per value: a page
 * of rows costs several times its bytes in heap); JSON, NDJSON and XLSX take CKAN's CSV pages too and
 * write each record (a sheet row) from their bytes, and Parquet reads their cells' bytes column by
 * column (parquet-from-csv.ts); the decimal comma encodes rows.
 */
function passthroughFor(
  query: ExportQuery,
  config: ExportSettings,
): { passthrough: PassthroughFactory; reorderable: true } | undefined {
  // Each reader's batches are rows' output bytes: a page may be held and handed on reversed (reorderable).
  if (config.jsonPassthrough && (query.format === "json" || query.format === "ndjson")) {
    const ndjson = query.format === "ndjson";
    return {
      passthrough: (incoming, dropFrom) => csvPages(() => jsonCsvReader(incoming, dropFrom, ndjson)),
      reorderable: true,
    };
  }
  if (config.csvPassthrough && query.format === "xlsx")
    return {
      passthrough: (incoming, dropFrom) => csvPages(() => xlsxCsvReader(incoming, dropFrom)),
      reorderable: true,
    };
  if (config.csvPassthrough && query.format === "parquet")
    return {
      passthrough: (incoming, dropFrom) => csvPages(() => parquetCsvReader(incoming, dropFrom)),
      reorderable: true,
    };
  if (!config.csvPassthrough || (query.format !== "csv" && query.format !== "tsv") || query.options.decimal !== ".")
    return undefined;
  const { delimiter, formulaGuard } = query.options;
  return {
    passthrough: (incoming, dropFrom) => csvPages(() => csvRecordsReader(incoming, dropFrom, formulaGuard, delimiter)),
    reorderable: true,
  };
}

/**
 * The export pipeline up to bytes: first page, encoder, byte stream. Shared by every sink (HTTP
 * response, R2 snapshot), and knows none of them. Throws an HttpError when the first page fails, or
 * a 503 before any upstream request when the isolate already runs as many exports as it holds.
 */
export async function openExport(
  query: ExportQuery,
  config: ExportSettings,
  site: CkanSite,
  onDone?: (progress: ExportProgress) => void,
): Promise<OpenExport> {
  // What the query asks of the paging (page sizes, limits, the pass-through) is settled before a request.
  const options = pagingOptions(query, config);
  const abort = new AbortController();
  const admission = admitExport();
  let table: Table;
  try {
    table = await openTable(site, query, { ...options, signal: abort.signal });
  } catch (error) {
    admission.release();
    throw error;
  }
  return streamTable(query, config, table, admission, abort, site.client.redact, onDone);
}

/**
 * An opened table (CKAN's pages, or an aggregate's result rows) through its format's encoder to a
 * byte stream: the admission is released and `onDone` told when the stream ends, however it ends.
 */
export async function streamTable(
  query: ExportQuery,
  config: ExportSettings,
  table: Table,
  admission: Admission,
  abort: AbortController,
  redact: (text: string) => string,
  onDone?: (progress: ExportProgress) => void,
): Promise<OpenExport> {
  const format = ENCODERS[query.format];
  const encoder = encoderFor(query, table.columns);
  const progress: ExportProgress = { rows: 0, chars: 0, bytes: 0 };
  const hooks: Required<ByteStreamHooks> = {
    // The reason quotes upstream text: no piece of a secret goes into the file's last line.
    failure: (reason) => encoder.failure(redact(reason)),
    cutOff: (error, reason) => encoder.cutOff?.(redact(reason), error instanceof ExportLimit),
    cancel: () => abort.abort(),
    done: (outcome) => {
      admission.release();
      progress.bytes = outcome.bytes;
      if (outcome.error) progress.error = outcome.error;
      onDone?.(progress);
    },
  };
  const pack = format.package === undefined ? undefined : packing(hooks, format.package());
  const encoding = touching(admission, encodeTable(table, encoder, progress));
  let chunks: AsyncGenerator<string | Uint8Array, void, undefined>;
  try {
    chunks = await primed(
      format.maxBytes === undefined ? encoding : withinSize(encoding, format.maxBytes, table, progress),
      abort,
    );
  } catch (error) {
    admission.release();
    throw error;
  }
  // The isolate's backstop for a stream whose watchdog never ran (its request torn down unseen).
  admission.onStalled(() => {
    abort.abort();
    void chunks.return().catch(() => {});
  });
  const encoded = toByteStream(chunks, pack?.hooks ?? hooks, {
    stallMs: config.stallSeconds * 1000,
    minBytesPerSecond: MIN_BYTES_PER_SECOND,
  });
  return { table, packed: pack !== undefined, body: pack?.wrap(encoded) ?? encoded, progress };
}

function pagingOptions(query: ExportQuery, config: ExportSettings): PagingOptions {
  return {
    pageSize: config.pageSize,
    rowLimit: query.rowLimit,
    subrequestLimit: config.subrequestLimit,
    concurrency: config.upstreamConcurrency,
    ...(passthroughFor(query, config) ?? {}),
  };
}

/** One stretch of an export that spans invocations: its encoded chunks, and where the next one goes on. */
export interface ExportPart {
  chunks: AsyncGenerator<string | Uint8Array, void, undefined>;
  /** Rows and characters encoded by this part (see ExportProgress). */
  progress: { rows: number; chars: number };
  /** Whether the export ended in this part (read once `chunks` is done). */
  ended(): boolean;
  /** Where the next part goes on (read once `chunks` is done). */
  resumeAt(): Resume;
  /** What the encoder paused with, for the next part's (see Encoder.pause; null if nothing). */
  carried(): EncoderCarry | null;
  /**
   * For a format whose end needs every part's paused state (FormatEncoder.closing): each part
   * pauses, the last too, and the caller writes the file's end from all their `carried()` states.
   */
  closing?: Closing;
  columns: Table["columns"];
}

/** A table's pages until `full()` says enough at a page's end; whether they stopped there or ended. */
function pagesUntil(pages: Table["pages"], full: () => boolean) {
  let stopped = false;
  let ended = false;
  async function* until(): AsyncGenerator<Batch, void, undefined> {
    try {
      for (;;) {
        // Every chunk of the pages so far has been taken: a part may end here.
        if (full()) {
          stopped = true;
          return;
        }
        const next = await pages.next();
        if (next.done) {
          ended = true;
          return;
        }
        yield next.value;
      }
    } finally {
      // Pages still in flight are dropped (the next part asks for them again).
      await pages.return();
    }
  }
  return { pages: until(), stopped: () => stopped, ended: () => ended };
}

/**
 * A part's encoder: a part that stops early writes no end, only what its encoder holds if it keeps
 * state between pages (Encoder.pause), and that state is kept for the next part. `stopped` is always
 * true for a format whose caller writes the end (FormatEncoder.closing).
 */
function pausing(encoder: Encoder<string | Uint8Array>, stopped: () => boolean) {
  let paused: EncoderCarry | null = null;
  const end = (): string | Uint8Array => {
    if (!stopped()) return encoder.end();
    if (encoder.pause === undefined) return "";
    const { chunk, carried } = encoder.pause();
    paused = carried;
    return chunk;
  };
  return { encoder: { ...encoder, end }, carried: () => paused };
}

/**
 * The export pipeline up to text, from `resume` (or the start) until `full()` says enough at a page's
 * end: the same pages, encoder and chunks as `openExport`, so the parts joined are its bytes. The
 * encoder goes on from the rows already written; a part that stops early writes no end. Its
 * requests are few (a part's pages), so the whole export's subrequest budget does not apply.
 */
export async function openExportPart(
  query: ExportQuery,
  config: ExportSettings,
  site: CkanSite,
  resume: Resume | undefined,
  full: () => boolean,
  carried?: EncoderCarry,
): Promise<ExportPart> {
  const format = ENCODERS[query.format];
  if (!format.resumable) throw new Error(`${query.format} cannot be written in parts`);
  const options = pagingOptions(query, config);
  const table = await openTable(site, query, {
    ...options,
    subrequestLimit: Number.POSITIVE_INFINITY,
    ...(resume === undefined ? {} : { resume }),
  });
  const continued =
    resume === undefined ? undefined : { rows: resume.rows, ...(carried === undefined ? {} : { carried }) };
  const until = pagesUntil(table.pages, full);
  const closing = closingFor(query, table.columns);
  const part = pausing(encoderFor(query, table.columns, continued), closing ? () => true : until.stopped);
  const progress = { rows: 0, chars: 0 };
  const encoded = encodeTable({ ...table, pages: until.pages }, part.encoder, progress);
  // A file too big for its format is refused from its first page, before a byte is stored.
  const chunks =
    format.maxBytes === undefined || resume !== undefined
      ? encoded
      : withinSize(encoded, format.maxBytes, table, progress);
  return {
    chunks,
    progress,
    ended: until.ended,
    resumeAt: () => table.resumeAt(),
    carried: part.carried,
    ...(closing === undefined ? {} : { closing }),
    columns: table.columns,
  };
}

/** What `openExport` would answer, without its rows: CKAN's count, after the same checks (for HEAD). */
export const describeExport = (
  query: ExportQuery,
  config: Pick<Config, "pageSize" | "subrequestLimit">,
  site: CkanSite,
): Promise<Pick<Table, "columns" | "total">> =>
  describeTable(site, query, {
    rowLimit: query.rowLimit,
    pageSize: config.pageSize,
    subrequestLimit: config.subrequestLimit,
  });
