// The one table of formats as links see them: route extension -> content type, the parameters only
// that format reads, its own row limit. Encoders are format/index.ts's, keyed by the same names.

/** One Excel sheet's rows, its header included. */
export const SHEET_ROWS = 1_048_576;

export interface Format {
  contentType: string;
  extension: string;
  /** Parameters only this format understands. */
  params: readonly string[];
  /** The most data rows the format holds, when it has a limit of its own. */
  maxRows?: number;
}

export const FORMATS = {
  csv: { contentType: "text/csv; charset=utf-8", extension: "csv", params: ["bom", "header", "delimiter", "decimal", "formula_guard", "errors"] },
  tsv: { contentType: "text/tab-separated-values; charset=utf-8", extension: "tsv", params: ["bom", "header", "decimal", "formula_guard", "errors"] },
  json: { contentType: "application/json; charset=utf-8", extension: "json", params: [] },
  ndjson: { contentType: "application/x-ndjson; charset=utf-8", extension: "ndjson", params: [] },
  xlsx: {
    contentType: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    extension: "xlsx",
    params: ["header", "errors"],
    // One sheet, its first row the header.
    maxRows: SHEET_ROWS - 1,
  },
  // The media type registered for Parquet in 2024.
  parquet: { contentType: "application/vnd.apache.parquet", extension: "parquet", params: ["header", "numeric"] },
} as const satisfies Record<string, Format>;

export type FormatName = keyof typeof FORMATS;

export const isFormatName = (name: string): name is FormatName => Object.hasOwn(FORMATS, name);

/** How a Parquet export writes numeric columns: CKAN's exact text, or doubles (see format/parquet-columns.ts). */
export type NumericMode = "text" | "double";

/** How a CSV or TSV export is written. */
export interface CsvOptions {
  bom: boolean;
  /** The header row: column ids, the data dictionary's labels (ids where a column has none), or none. */
  header: "id" | "label" | "none";
  delimiter: string;
  formulaGuard: boolean;
  /** The decimal mark of numbers in numeric columns: "," for locales that read `-0,50` as a number. */
  decimal: "." | ",";
}
