import type { Column, Row } from "./types.ts";

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
