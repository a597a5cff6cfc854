import { CsvRecordsStream, endOfCell, readCell, scanned } from "../format/csv-records.ts";
import type { CopiedRecords, PassthroughFactory, RecordsReader, RecordsStream } from "../rows/batch.ts";
import { NotTheJson } from "../rows/json-bytes.ts";
import type { Column } from "../rows/types.ts";
import { CsvRow } from "./csv-row.ts";
import { kindOf } from "./values.ts";

// Pages after the first asked as CKAN's CSV records (`records_format: "csv"`): one JSON string,
// read as its answer arrives (csv-records.ts's CsvRecordsStream hands over whole rows a segment at a
// time) and cell by cell straight from its bytes, as the CSV export reads them; each row folded as it
// is read, each cell a stretch of those bytes (csv-row.ts): no string, no array, no object per row,
// no page held. Far cheaper than walking a page of JSON lists value by value, the pages are smaller
// on the wire, and an aggregate allocates next to nothing while it reads (a heap that does not grow
// with the rows read). A page is read when the paging loop reaches it: rows fold in table order.

const EMPTY = new Uint8Array(0);

/**
 * Reads the records string at `at` of `b` (a whole page's, or a segment's of whole rows: CKAN's CSV
 * as a JSON string, LF rows, quotes doubled, null an empty unquoted cell) into `row` a row at a time,
 * each cell's escapes undone in place (a cell never grows; the bytes are not read again), and hands
 * `fold` each row in turn. Returns the rows read, where the string ends, and the text of the last
 * row's cell `idAt` (keyset paging's `_id`: the page's last), if asked.
 */
export function csvRows(
  b: Uint8Array,
  at: number,
  row: CsvRow,
  fold: (row: CsvRow) => void,
  idAt = -1,
): { rows: number; end: number; lastId: string | undefined } {
  if (b[at] !== 34) throw new NotTheJson("expected the records string");
  const width = row.width;
  const last = width - 1;
  row.bytes = b;
  let i = at + 1;
  let rows = 0;
  while (b[i] !== 34) {
    if (i >= b.length) throw new NotTheJson("unterminated string");
    for (let c = 0; c < width; c++) {
      i = cutCell(b, i, row, c);
      if (scanned.ended !== (c === last)) throw new NotTheJson("a CSV row of another width");
    }
    fold(row);
    rows++;
  }
  return { rows, end: i + 1, lastId: rows === 0 || idAt < 0 ? undefined : row.textOf(idAt) };
}

/**
 * Cell `c` of `row` at b[i]: most cells (unquoted, no escape) are taken where they are; a quoted one,
 * or one with an escape, is written over itself with its escapes undone. Returns where the next
 * cell starts; `scanned.ended` says whether the row ended.
 */
function cutCell(b: Uint8Array, i: number, row: CsvRow, c: number): number {
  let end = i;
  for (;;) {
    const byte = b[end];
    if (byte === 44 || byte === 92 || byte === 34 || byte === undefined) break;
    end++;
  }
  if (b[end] !== 92 || b[end + 1] === 110) {
    row.starts[c] = i;
    row.ends[c] = end;
    row.quoted[c] = 0;
    return endOfCell(b, end);
  }
  readCell(b, i, b, i, false, false);
  row.starts[c] = i;
  row.ends[c] = scanned.o;
  row.quoted[c] = scanned.quoted ? 1 : 0;
  return scanned.i;
}

/** Row ends of a page that has no bytes (its rows were folded): zeros, never written, shared. */
let ZEROS = new Uint32Array(4096);
function zeros(rows: number): Uint32Array {
  if (rows > ZEROS.length) ZEROS = new Uint32Array(Math.max(rows, ZEROS.length * 2));
  return ZEROS.subarray(0, rows);
}

/**
 * The pass-through that asks later pages as CSV and hands their rows to `onRow`, each page as its
 * answer arrives (or whole, where an answer cannot be read so). Each page's last `_id` (keyset
 * paging) is its last row's `_id` cell.
 */
export function csvPages(onRow: (row: CsvRow) => void): { passthrough: PassthroughFactory } {
  const passthrough: PassthroughFactory = (incoming: Column[]) => {
    const row = new CsvRow(incoming.map((c) => kindOf(c.type)));
    const idAt = incoming.findIndex((c) => c.id === "_id");
    const pages = new PageAttempts(idAt);
    /** The JSON string at `at` of `answer` (a whole page's, or a segment's of whole rows). */
    const readString = (answer: Uint8Array, at: number, fold: (row: CsvRow) => void): CopiedRecords => {
      const read = csvRows(answer, at, row, fold, idAt);
      return { page: { bytes: EMPTY, rows: read.rows, ends: zeros(read.rows) }, end: read.end, lastId: read.lastId };
    };
    const read: RecordsReader = (answer, at) => {
      const fold = pages.begin(onRow);
      try {
        return readString(answer, at, fold);
      } finally {
        pages.end();
      }
    };
    const stream = (): RecordsStream => {
      const fold = pages.begin(onRow);
      const segments = new CsvRecordsStream((answer, at) => readString(answer, at, fold));
      return {
        push(chunk) {
          const pushed = segments.push(chunk);
          if (segments.ended) pages.end();
          return pushed;
        },
        finish() {
          const finished = segments.finish();
          if (segments.ended) pages.end();
          return finished;
        },
        get ended() {
          return segments.ended;
        },
      };
    };
    return { recordsFormat: "csv", read, stream };
  };
  return { passthrough };
}

/**
 * Each answer read for a page, so a row is folded once however often its page is asked: the paging
 * loop asks a page again when its answer broke off (skipping the rows it handed on), and the fold
 * happens as rows are read. An answer whose first `_id` is the page's, or that follows one that
 * did not end, is the same page again: its rows already folded are skipped.
 */
class PageAttempts {
  private readonly idAt: number;
  /** Whether the last answer read its records to the end. */
  private ended = true;
  private firstId: string | undefined;
  /** Rows of the page folded so far. */
  private folded = 0;

  constructor(idAt: number) {
    this.idAt = idAt;
  }

  /** A new answer: the fold of its rows, those of its page folded already left out. */
  begin(onRow: (row: CsvRow) => void): (row: CsvRow) => void {
    let seen = -1;
    let skip = 0;
    return (row) => {
      if (seen < 0) {
        const id = this.idAt < 0 ? undefined : row.textOf(this.idAt);
        const again = !this.ended || (id !== undefined && id === this.firstId);
        if (!again) this.folded = 0;
        skip = this.folded;
        this.firstId = id;
        this.ended = false;
        seen = 0;
      }
      if (seen++ < skip) return;
      this.folded = seen;
      onRow(row);
    };
  }

  end(): void {
    this.ended = true;
  }
}
