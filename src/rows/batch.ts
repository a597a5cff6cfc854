import { own, ownedBytes, release } from "./owned-bytes.ts";
import type { Column, Row } from "./types.ts";

/** A page copied from CKAN's answer bytes into the export's, never decoded: bytes to send as they are. */
export interface PassedBytes {
  bytes: Uint8Array;
  rows: number;
  /** Where each row ends in `bytes`, so a page can be cut after any row. */
  ends: Uint32Array;
}

/** What the paging loop hands the encoder: rows to encode, or a page that needs no encoding. */
export type Batch = Row[] | PassedBytes;

export const batchRows = (batch: Batch): number => (Array.isArray(batch) ? batch.length : batch.rows);

/** The records of one answer turned into output bytes, where they end in the answer, and the first and last `_id`s' text. */
export interface CopiedRecords {
  page: PassedBytes;
  end: number;
  lastId: string | undefined;
  /** The first row's `_id`: a page asked from the table's end is checked by both (see ckan/from-end.ts). */
  firstId?: string | undefined;
}

/** Reads the records value at `at` of CKAN's answer bytes into output bytes (throws NotTheJson for another shape). */
export type RecordsReader = (answer: Uint8Array, at: number) => CopiedRecords;

/** What a streamed records string gave for the bytes pushed so far. */
export interface StreamedRecords {
  /** Whole rows read, or undefined while none are ready (a row still incomplete, or too few gathered). */
  records: CopiedRecords | undefined;
  /** Set once the records string ended: the answer's bytes after its closing quote. */
  after: Uint8Array | undefined;
}

/** A records string read as the answer arrives: its bytes pushed from just after its opening quote. */
export interface RecordsStream {
  /** Copies what it keeps of `chunk` (its caller reuses or frees it next). */
  push(chunk: Uint8Array): StreamedRecords;
  /** The answer ended: the rows still kept, and the string's end if it was not found yet (`ended` says). */
  finish(): StreamedRecords;
  readonly ended: boolean;
}

/**
 * How later pages skip the row encoder: the records format to ask for, and the reader that writes
 * its records as output bytes, for the columns as requested (those from `dropFrom` on left out);
 * `stream` reads the same records as the answer arrives (chunk by chunk, whole rows out).
 */
export type PassthroughFactory = (
  incoming: Column[],
  dropFrom: number,
) => { recordsFormat: "csv" | "lists"; read: RecordsReader; stream?: () => RecordsStream };

/** The first `rows` rows of a batch: the end of an export that was asked for more than it needs. */
export function leadingRows(batch: Batch, rows: number): Batch {
  if (Array.isArray(batch)) return batch.slice(0, rows);
  const ends = batch.ends.subarray(0, rows);
  return { bytes: batch.bytes.subarray(0, rows === 0 ? 0 : ends[rows - 1]), rows, ends };
}

// Readers grow their output with these, outside their closures: a buffer captured by an inner
// function lives in a context object, and every byte written through it costs a load and a store.

/** `out` with room for `needed` more bytes after the `used` it holds (`out` itself is freed). */
export function grownBytes(out: Uint8Array<ArrayBuffer>, used: number, needed: number): Uint8Array<ArrayBuffer> {
  const bigger = ownedBytes(Math.max(out.length * 2, used + needed));
  bigger.set(out.subarray(0, used));
  release(out);
  return bigger;
}

/** Where a page's rows end, owned (freed once the page is sent, see owned-bytes.ts). */
export const rowEnds = (length = 1024): Uint32Array<ArrayBuffer> => own(new Uint32Array(length));

export function grownEnds(ends: Uint32Array<ArrayBuffer>): Uint32Array<ArrayBuffer> {
  const more = rowEnds(ends.length * 2);
  more.set(ends);
  release(ends);
  return more;
}
