import type { CkanClient } from "../ckan/client.ts";
import { describeTable, openTable, type Table } from "../ckan/pages.ts";
import type { Config } from "../config.ts";
import type { HttpError } from "../errors.ts";
import type { PassthroughFactory } from "../format/batch.ts";
import { csvPassthrough } from "../format/csv-passthrough.ts";
import { FORMATS } from "../format/index.ts";
import { encodeTable, toByteStream } from "./encode.ts";
import type { ExportQuery } from "./query.ts";

/** Live counters of one export, final once its byte stream has ended. */
export interface ExportProgress {
  rows: number;
  bytes: number;
  error?: HttpError;
}

export interface ExportRun {
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

/**
 * The export pipeline up to bytes: first page, encoder, byte stream. Shared by every sink (HTTP
 * response, R2 snapshot), and knows none of them. Throws an HttpError when the first page fails.
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
    subrequestLimit: config.subrequestLimit,
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
  return { table, body, progress };
}

/** What `runExport` would answer, without its rows: CKAN's count, after the same checks (for HEAD). */
export const describeExport = (query: ExportQuery, config: Config, client: CkanClient): Promise<Pick<Table, "columns" | "total">> =>
  describeTable(client, config.datastoreSearchUrl, query, config.maxRows);
