import { grownBytes, grownEnds, rowEnds, type RecordsReader } from "../rows/batch.ts";
import { NotTheJson } from "../rows/json-bytes.ts";
import { ownedBytes } from "../rows/owned-bytes.ts";
import type { Column } from "../rows/types.ts";
import { isJsonType } from "../rows/values.ts";
import { bytesText, copiedPage, readCell, scanned } from "./csv-records.ts";

// Parquet's pages after the first, read from CKAN's `records_format: "csv"` answer bytes (as XLSX
// and JSON read theirs) into cells, each value's text as bytes: no page decoded to a string, no
// string per value, no text encoded to UTF-8 again (in workerd those three took about 40% of a
// Parquet export's CPU). CKAN builds its CSV and its `lists` records from the same value texts
// (json-from-csv.ts), so a cell's text is the value's: a number's digits, `t`/`f`, a date or
// timestamp, a string's text, an array's or json's JSON text. The Parquet encoder reads the cells
// (`cellsOf`) column by column (parquet-values.ts `addCells`).
//
// A batch's bytes are its rows, each row its columns' cells in order: a cell is its text's length
// as a 4-byte little-endian integer (NULL_CELL for null), then the text's UTF-8. Rows are whole byte
// ranges, so a page asked from the table's end is held and handed on reversed as any other.

/** A null cell's length. */
export const NULL_CELL = -1;
const HEAD = 4;
const QUOTE = 34;

/** Where each cell of a batch's rows starts (its text) and its length (NULL_CELL for null), row by row. */
export interface Cells {
  bytes: Uint8Array;
  at: Int32Array;
  length: Int32Array;
  rows: number;
  width: number;
  /** Where the bytes after these rows' cells begin. */
  end: number;
}

const isNull = (out: Uint8Array, at: number, end: number): boolean =>
  end - at === 4 && out[at] === 0x6e && out[at + 1] === 0x75 && out[at + 2] === 0x6c && out[at + 3] === 0x6c;

function putLength(out: Uint8Array, at: number, n: number): void {
  out[at] = n & 0xff;
  out[at + 1] = (n >>> 8) & 0xff;
  out[at + 2] = (n >>> 16) & 0xff;
  out[at + 3] = n >>> 24;
}

/** The cells of CKAN's CSV records, for the columns as requested (those from `dropFrom` on left out). */
export function parquetCsvReader(incoming: Column[], dropFrom: number): RecordsReader {
  // A json or array column's null is `null` unquoted (as json-from-csv.ts reads it); any column's is an empty unquoted cell.
  const json = incoming.map((c) => isJsonType(c.type.toLowerCase()));
  const width = incoming.length;
  // Output bytes per input byte, from the last batch: a cell's head is 4 bytes where CKAN's CSV has a comma.
  let ratio = 1.5;
  return (b, at) => {
    if (b[at] !== QUOTE) throw new NotTheJson("records are not a string");
    const length = b.length;
    let out = ownedBytes(Math.ceil((length - at) * ratio) + HEAD * width + 1024);
    let o = 0;
    let ends = rowEnds();
    let rows = 0;
    let lastStart = -1;
    let lastEnd = -1;
    let firstStart = -1;
    let column = 0;
    let i = at + 1;
    for (;;) {
      if (i >= length) throw new NotTheJson("unterminated string");
      // A cell's text is at most its input (escapes only shrink): room for the rest of the input and a head.
      const room = o + HEAD + (length - i) + 64;
      if (room > out.length) out = grownBytes(out, o, room - o);
      if (column === 0 && b[i] === QUOTE) break;
      const start = i;
      readCell(b, i, out, o + HEAD, false, false);
      i = scanned.i;
      if (column < dropFrom) {
        const end = scanned.o;
        const nothing = !scanned.quoted && (end === o + HEAD || (json[column] === true && isNull(out, o + HEAD, end)));
        putLength(out, o, nothing ? NULL_CELL : end - o - HEAD);
        o = nothing ? o + HEAD : end;
      }
      if (column === width - 1) {
        lastStart = start;
        lastEnd = i;
        if (firstStart < 0) firstStart = start;
      }
      if (scanned.ended) {
        if (column !== width - 1) throw new NotTheJson(`a row has ${column + 1} cells for ${width} columns`);
        if (rows === ends.length) ends = grownEnds(ends);
        ends[rows++] = o;
        column = 0;
      } else column++;
    }
    if (length - at > 1 && o > 0) ratio = Math.max(1, o / (length - at));
    return copiedPage(out, o, ends, rows, i + 1, { b, firstStart, lastStart, lastEnd });
  };
}

// One slice's cell index at a time (a Parquet encoder reads a batch's rows a slice at a time, synchronously).
let atOf = new Int32Array(1 << 14);
let lengthOf = new Int32Array(1 << 14);

/**
 * The cells of `rows` rows of `width` columns from byte `from` of a batch's bytes, indexed (the
 * index is reused by the next call: a slice of rows, so it stays small however large the page).
 */
export function cellsOf(bytes: Uint8Array, from: number, rows: number, width: number): Cells {
  const n = rows * width;
  if (atOf.length < n) {
    atOf = new Int32Array(n);
    lengthOf = new Int32Array(n);
  }
  let p = from;
  for (let k = 0; k < n; k++) {
    const cell = bytes[p]! | (bytes[p + 1]! << 8) | (bytes[p + 2]! << 16) | (bytes[p + 3]! << 24);
    atOf[k] = p + HEAD;
    lengthOf[k] = cell;
    p += cell > 0 ? HEAD + cell : HEAD;
  }
  return { bytes, at: atOf, length: lengthOf, rows, width, end: p };
}

/** A cell's text as a string, for the converters that read one (a float, an unusual value). */
export const cellText = (bytes: Uint8Array, at: number, length: number): string => bytesText(bytes, at, at + length);
