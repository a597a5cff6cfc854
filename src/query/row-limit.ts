import { RowLimitExceeded } from "../errors.ts";
import { FORMATS, type Format, type FormatName } from "./formats.ts";

/**
 * The most rows one export may hold, worked out once per export query: the worker's MAX_ROWS, or
 * the format's own when lower (an XLSX sheet's rows below its header).
 */
export interface RowLimit {
  rows: number;
  format: FormatName;
  /** The format's own maximum is the lower one: messages say so, and point to CSV. */
  formatOwn: boolean;
}

export function rowLimitOf(format: FormatName, workerMax: number): RowLimit {
  const own = (FORMATS[format] as Format).maxRows;
  return own !== undefined && own < workerMax
    ? { rows: own, format, formatOwn: true }
    : { rows: workerMax, format, formatOwn: false };
}

/** Whose maximum a `limit` above it passes, as the 400 on `limit=` says it. */
export const whoseMaximum = (limit: RowLimit): string =>
  limit.formatOwn
    ? `the ${limit.format} format's maximum of ${limit.rows} rows (a sheet's rows, less the header)`
    : `this worker's maximum of ${limit.rows} rows per export`;

/**
 * The one check of the row limit for an export without `limit`: `rows` match by CKAN's count
 * (`exact`, or `about` when CKAN estimated it), or were counted while paging (`more`: the count was
 * short, and the rows seen so far already pass the limit).
 */
export function checkRowLimit(limit: RowLimit, rows: number, how: "exact" | "about" | "more"): void {
  if (rows <= limit.rows) return;
  const matching = how === "more" ? `More than ${limit.rows}` : how === "about" ? `About ${rows}` : `${rows}`;
  const sheet = limit.formatOwn
    ? ` A ${limit.format} sheet holds ${limit.rows} rows below its header: export CSV for more.`
    : "";
  throw new RowLimitExceeded(
    `${matching} rows match, more than this worker's maximum of ${limit.rows} rows per export. Add limit=${limit.rows} (or less), narrow with filters or q, or export in parts with offset.${sheet}`,
  );
}
