/** A column as CKAN describes it: id and PostgreSQL type name. */
export interface Column {
  id: string;
  type: string;
  /** The data dictionary's label for the column (CKAN's `fields[].info.label`), when it has one. */
  label?: string;
}

/**
 * A row: one cell per output column, in column order, each the exact JSON text CKAN wrote for the
 * value (`-0.50`, `"text"`, `["a","b"]`, `null`); undefined where CKAN sent no value. Extra trailing
 * cells are ignored.
 */
export type Row = (string | undefined)[];

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

/**
 * One renderer per format. An instance writes one export: `begin` once, `page` per upstream page
 * (rows may be rewritten in place: the page is the encoder's to consume), `end` after the last page.
 * `failure` gives the text that makes a cut-off download visibly incomplete, or "" when stopping
 * already leaves the output invalid.
 *
 * `cutOff`, for a format whose failures otherwise leave a file no reader opens (XLSX), gives the end
 * of a whole file whose last row says the export stopped at a row limit, or undefined when it cannot
 * (any other failure, or no row left to say it in). The file then ends normally; the export still
 * counts as failed, so no cache or snapshot keeps it.
 */
export interface Encoder {
  begin(): string;
  page(rows: Row[]): string;
  end(): string;
  failure(reason: string): string;
  cutOff?(reason: string, rowLimit: boolean): string | undefined;
}
