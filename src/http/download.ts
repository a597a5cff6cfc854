import type { Table } from "../ckan/table.ts";
import { contentDisposition } from "../query/filename.ts";
import type { ExportQuery } from "../query/export-query.ts";
import { FORMATS } from "../query/formats.ts";

/**
 * The headers that describe an export download: type, name and CKAN's count of matching rows, and
 * what its pipeline adds (an aggregate's X-Aggregated-By).
 */
export function downloadHeaders(
  query: ExportQuery,
  table: Pick<Table, "total"> & { headers?: Record<string, string> | undefined },
): Headers {
  const headers = new Headers({
    "content-type": FORMATS[query.format].contentType,
    "content-disposition": contentDisposition(query.filename),
    "x-content-type-options": "nosniff",
  });
  if (table.total !== undefined) headers.set("x-total-count", String(table.total));
  for (const [name, value] of Object.entries(table.headers ?? {})) headers.set(name, value);
  return headers;
}
