import type { CkanClient } from "../ckan/client.ts";
import { admitExport, type Admission } from "../ckan/page-budget.ts";
import { describeTable, openTable, type Table } from "../ckan/table.ts";
import type { Config } from "../config/config.ts";
import { HttpError } from "../errors.ts";
import type { PassthroughFactory } from "../rows/batch.ts";
import { csvRecordsReader } from "../format/csv-passthrough.ts";
import { jsonCsvReader } from "../format/json-from-csv.ts";
import { formatMaxRows, type FormatName } from "../query/formats.ts";
import { ENCODERS } from "../format/index.ts";
import { encodeTable, toByteStream, type ByteStreamHooks } from "./byte-stream.ts";
import { packing } from "./container.ts";
import type { ExportQuery } from "../query/export-query.ts";

/** Live counters of one export, final once its byte stream has ended. */
export interface ExportProgress {
  rows: number;
  /** Characters encoded so far (before a container such as XLSX's ZIP compresses them). */
  chars: number;
  bytes: number;
  error?: HttpError;
}

export interface ExportRun {
  table: Pick<Table, "total" | "expectedRows" | "firstPageRows">;
  /** The bytes are a container's (XLSX's ZIP): their first chunk says nothing of a row's size. */
  packed: boolean;
  body: ReadableStream<Uint8Array>;
  progress: ExportProgress;
}

/**
 * CSV and TSV (any delimiter) with the decimal point take CKAN's own CSV pages and rewrite them (far
 * cheaper than parsing every value and writing it again, and no JavaScript string per value: a page
 * of rows costs several times its bytes in heap); JSON and NDJSON copy later pages' values from
 * CKAN's answer bytes between their keys; the decimal comma and XLSX encode rows.
 */
function passthroughFor(query: ExportQuery, config: Config): { passthrough: PassthroughFactory } | undefined {
  if (config.jsonPassthrough && (query.format === "json" || query.format === "ndjson")) {
    const ndjson = query.format === "ndjson";
    return { passthrough: (incoming, dropFrom) => ({ recordsFormat: "csv", read: jsonCsvReader(incoming, dropFrom, ndjson) }) };
  }
  if (!config.csvPassthrough || (query.format !== "csv" && query.format !== "tsv") || query.csv.decimal !== ".") return undefined;
  const { delimiter, formulaGuard } = query.csv;
  return { passthrough: (incoming, dropFrom) => ({ recordsFormat: "csv", read: csvRecordsReader(incoming, dropFrom, formulaGuard, delimiter) }) };
}

/**
 * The export pipeline up to bytes: first page, encoder, byte stream. Shared by every sink (HTTP
 * response, R2 snapshot), and knows none of them. Throws an HttpError when the first page fails, or
 * a 503 before any upstream request when the isolate already runs as many exports as it holds.
 */
export async function runExport(
  query: ExportQuery,
  config: Config,
  client: CkanClient,
  onDone?: (progress: ExportProgress) => void,
): Promise<ExportRun> {
  const format = ENCODERS[query.format];
  const abort = new AbortController();
  const admission = admitExport();
  let table: Table;
  try {
    table = await withFormatLimit(query.format, config, openTable(client, config.datastoreSearchUrl, query, {
      pageSize: config.pageSize,
      maxRows: formatMaxRows(query.format, config.maxRows),
      subrequestLimit: config.subrequestLimit,
      concurrency: config.upstreamConcurrency,
      ...(passthroughFor(query, config) ?? {}),
      signal: abort.signal,
    }));
  } catch (error) {
    admission.release();
    throw error;
  }
  const encoder = format.encoder(table.columns, query.csv);
  const progress: ExportProgress = { rows: 0, chars: 0, bytes: 0 };
  const hooks: Required<ByteStreamHooks> = {
    failure: (reason) => encoder.failure(reason),
    cutOff: (error, reason) => encoder.cutOff?.(reason, isRowLimit(error)),
    cancel: () => abort.abort(),
    done: (outcome) => {
      admission.release();
      progress.bytes = outcome.bytes;
      if (outcome.error) progress.error = outcome.error;
      onDone?.(progress);
    },
  };
  const pack = format.package === undefined ? undefined : packing(hooks, format.package());
  const encoded = toByteStream(explainLimit(query.format, config, encodeTable(table, encoder, progress), admission), pack?.hooks ?? hooks);
  return { table, packed: pack !== undefined, body: pack?.wrap(encoded) ?? encoded, progress };
}

/** What `runExport` would answer, without its rows: CKAN's count, after the same checks (for HEAD). */
export const describeExport = (query: ExportQuery, config: Config, client: CkanClient): Promise<Pick<Table, "columns" | "total">> =>
  withFormatLimit(query.format, config, describeTable(client, config.datastoreSearchUrl, query, {
      maxRows: formatMaxRows(query.format, config.maxRows),
      pageSize: config.pageSize,
      subrequestLimit: config.subrequestLimit,
    }));

/** The 400 of too many rows (before the first byte, or found while paging when CKAN's count was short). */
const isRowLimit = (error: unknown): error is HttpError => error instanceof HttpError && error.status === 400 && error.parameter === "limit";

/** Too many rows for a format with a limit below the worker's (a spreadsheet's rows): the 400 says so. */
function formatLimitError(format: FormatName, config: Config, error: unknown): unknown {
  const max = formatMaxRows(format, config.maxRows);
  if (!isRowLimit(error) || max === config.maxRows) return error;
  return new HttpError(400, `${error.message} A ${format} sheet holds ${max} rows below its header: export CSV for more.`, { parameter: "limit", cause: error });
}

async function withFormatLimit<T>(format: FormatName, config: Config, opening: Promise<T>): Promise<T> {
  try {
    return await opening;
  } catch (error) {
    throw formatLimitError(format, config, error);
  }
}

/** The chunks, a row limit's 400 explained for the format; each chunk tells the isolate's admission the export moves. */
async function* explainLimit<T>(format: FormatName, config: Config, chunks: AsyncGenerator<T, void, undefined>, admission: Admission): AsyncGenerator<T, void, undefined> {
  try {
    for await (const chunk of chunks) {
      admission.touch();
      yield chunk;
    }
  } catch (error) {
    throw formatLimitError(format, config, error);
  }
}
