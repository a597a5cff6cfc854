/** A column as CKAN describes it: id and PostgreSQL type name. */
export interface Column {
  id: string;
  type: string;
}

/** A row: one value per output column, in column order, straight from CKAN's JSON (extra trailing cells are ignored). */
export type Row = unknown[];

/** A page CKAN sent as CSV text and the CSV writer already rewrote: bytes to pass on as they are. */
export interface PassedPage {
  text: string;
  rows: number;
}

/** What the paging loop hands the encoder: rows to encode, or a page that needs no encoding. */
export type Batch = Row[] | PassedPage;

export const batchRows = (batch: Batch): number => (Array.isArray(batch) ? batch.length : batch.rows);

/** Builds the rewriter of CSV pages for the columns as requested; those from `dropFrom` on are left out. */
export type PassthroughFactory = (incoming: Column[], dropFrom: number) => (page: string) => PassedPage;

/**
 * One renderer per format. An instance writes one export: `begin` once, `page` per upstream page
 * (rows may be rewritten in place: the page is the encoder's to consume), `end` after the last page.
 * `failure` gives the text that makes a cut-off download visibly incomplete, or "" when stopping
 * already leaves the output invalid.
 */
export interface Encoder {
  begin(): string;
  page(rows: Row[]): string;
  end(): string;
  failure(reason: string): string;
}
