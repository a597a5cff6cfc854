import { toHttpError } from "../errors.ts";
import { csvCell } from "../format/csv.ts";
import { FORMATS, isFormatName, type Format } from "../query/formats.ts";
import type { ErrorMode } from "../query/params.ts";
import { xlsxEncoder, xlsxPackage } from "../format/xlsx.ts";

/**
 * Spreadsheet fetchers that show only "could not fetch" or "(400): Bad Request" for an HTTP error,
 * never its body, as they name themselves in User-Agent:
 * - Google Sheets (`IMPORTDATA`, `IMPORTHTML`): `Mozilla/5.0 (compatible; GoogleDocs; apps-spreadsheets; +http://docs.google.com)`
 * - Excel and Power BI Power Query (`Web.Contents`, From Web): `Microsoft.Data.Mashup (https://go.microsoft.com/fwlink/?LinkID=304225)`
 */
export const SPREADSHEET_AGENTS = /GoogleDocs; apps-spreadsheets|Microsoft\.Data\.Mashup/;

/**
 * Whether an error on this export link is answered as a table a spreadsheet shows: as the link's
 * `errors` asks (see errorModeOf), else when the caller is a spreadsheet fetcher.
 */
export function wantsInlineError(method: string, mode: ErrorMode | undefined, userAgent: string | null): boolean {
  // Only a download is shown in a cell; a wrong method keeps its 405.
  if (method !== "GET" && method !== "HEAD") return false;
  if (mode !== undefined) return mode === "inline";
  return SPREADSHEET_AGENTS.test(userAgent ?? "");
}

const utf8 = new TextEncoder();

/**
 * An error before the first byte as a one-cell table (`#ERROR: <message>`) in the link's format,
 * with HTTP 200 so the spreadsheet shows it; `X-Export-Error` keeps the status, and `no-store`
 * keeps every cache (this worker's included) from ever holding it in place of the export.
 */
export function inlineErrorResponse(error: unknown, format: string, redact: (text: string) => string): Response {
  const httpError = toHttpError(error);
  const text = redact(`#ERROR: ${httpError.message}`);
  const entry: Format = isFormatName(format) ? FORMATS[format] : FORMATS.csv;
  const headers = new Headers({
    ...httpError.headers,
    "content-type": entry.contentType,
    "cache-control": "no-store",
    "x-export-error": String(httpError.status),
  });
  headers.set("x-content-type-options", "nosniff");
  if (format !== "xlsx") {
    // Quoted by the CSV rule, which TSV shares.
    return new Response(`${csvCell(text)}\r\n`, { status: 200, headers });
  }
  const sheet = xlsxEncoder([], { header: [text] });
  const xml = sheet.begin() + sheet.end();
  const body = new Blob([utf8.encode(xml)]).stream().pipeThrough(xlsxPackage());
  return new Response(body, { status: 200, headers });
}
