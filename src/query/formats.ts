// The one table of formats as links see them: route extension -> content type, its own row limit.
// Which parameters each takes, the parameter table says (params.ts); encoders are format/index.ts's,
// keyed by the same names, each with its options below.

/** One Excel sheet's rows, its header included. */
export const SHEET_ROWS = 1_048_576;

export interface Format {
  contentType: string;
  extension: string;
  /** The most data rows the format holds, when it has a limit of its own. */
  maxRows?: number;
}

export const FORMATS = {
  csv: { contentType: "text/csv; charset=utf-8", extension: "csv" },
  tsv: { contentType: "text/tab-separated-values; charset=utf-8", extension: "tsv" },
  json: { contentType: "application/json; charset=utf-8", extension: "json" },
  ndjson: { contentType: "application/x-ndjson; charset=utf-8", extension: "ndjson" },
  xlsx: {
    contentType: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    extension: "xlsx",
    // One sheet, its first row the header.
    maxRows: SHEET_ROWS - 1,
  },
  // The media type registered for Parquet in 2024.
  parquet: { contentType: "application/vnd.apache.parquet", extension: "parquet" },
} as const satisfies Record<string, Format>;

export type FormatName = keyof typeof FORMATS;

export const isFormatName = (name: string): name is FormatName => Object.hasOwn(FORMATS, name);

/** How a Parquet export writes numeric columns: CKAN's exact text, or doubles (see format/parquet-columns.ts). */
export type NumericMode = "text" | "double";

/** The header row: column ids, the data dictionary's labels (ids where a column has none), or none. */
export type HeaderMode = "id" | "label" | "none";

/** How a CSV or TSV export is written (TSV: its delimiter is the tab). */
export interface CsvOptions {
  bom: boolean;
  header: HeaderMode;
  delimiter: string;
  formulaGuard: boolean;
  /** The decimal mark of numbers in numeric columns: "," for locales that read `-0,50` as a number. */
  decimal: "." | ",";
}

/** How an XLSX sheet or a Parquet file names its columns: ids or labels (it always does). */
export interface NamedColumns {
  header: Exclude<HeaderMode, "none">;
}

export interface ParquetOptions extends NamedColumns {
  numeric: NumericMode;
}

/** Each format's own options, as its encoder takes them. */
export interface FormatOptions {
  csv: CsvOptions;
  tsv: CsvOptions;
  json: Record<string, never>;
  ndjson: Record<string, never>;
  xlsx: NamedColumns;
  parquet: ParquetOptions;
}

/** A format and its options, told apart by the format's name. */
export type Output = { [F in FormatName]: { format: F; options: FormatOptions[F] } }[FormatName];
