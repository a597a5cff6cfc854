import type { Column, Row } from "./types.ts";

/** A page CKAN sent as CSV text and the CSV writer already rewrote: bytes to pass on as they are. */
export interface PassedPage {
  text: string;
  rows: number;
}

/** A page copied from CKAN's answer bytes into the export's, never decoded: bytes to send as they are. */
export interface PassedBytes {
  bytes: Uint8Array;
  rows: number;
  /** Where each row ends in `bytes`, so a page can be cut after any row. */
  ends: Uint32Array;
}

/** What the paging loop hands the encoder: rows to encode, or a page that needs no encoding. */
export type Batch = Row[] | PassedPage | PassedBytes;

export const batchRows = (batch: Batch): number => (Array.isArray(batch) ? batch.length : batch.rows);

/** The records of one answer turned into output bytes, where they end in the answer, and the last `_id`'s text. */
export interface CopiedRecords {
  page: PassedBytes;
  end: number;
  lastId: string | undefined;
}

/** Reads the records value at `at` of CKAN's answer bytes into output bytes (throws NotTheJson for another shape). */
export type RecordsReader = (answer: Uint8Array, at: number) => CopiedRecords;

/**
 * How later pages skip the row encoder, for the columns as requested (those from `dropFrom` on are
 * left out): CSV text rewritten, or records copied from the answer's bytes.
 */
export type PassthroughFactory = (
  incoming: Column[],
  dropFrom: number,
) => { recordsFormat: "csv"; rewrite: (page: string) => PassedPage } | { recordsFormat: "lists"; read: RecordsReader };

/** The end of the first `rows` CRLF-ended rows of CSV text (a quoted cell may hold CR and LF). */
function rowsEnd(text: string, rows: number): number {
  let at = 0;
  for (let row = 0; row < rows; row++) {
    for (;;) {
      const quote = text.indexOf('"', at);
      const end = text.indexOf("\r\n", at);
      if (end < 0) return text.length;
      if (quote < 0 || end < quote) {
        at = end + 2;
        break;
      }
      // Past the quoted stretch; an escaped quote ("") closes and reopens it, which comes to the same.
      const close = text.indexOf('"', quote + 1);
      if (close < 0) return text.length;
      at = close + 1;
    }
  }
  return at;
}

/** The first `rows` rows of a batch: the end of an export that was asked for more than it needs. */
export function leadingRows(batch: Batch, rows: number): Batch {
  if (Array.isArray(batch)) return batch.slice(0, rows);
  if ("bytes" in batch) {
    const ends = batch.ends.subarray(0, rows);
    return { bytes: batch.bytes.subarray(0, rows === 0 ? 0 : ends[rows - 1]), rows, ends };
  }
  return { text: batch.text.slice(0, rowsEnd(batch.text, rows)), rows };
}
