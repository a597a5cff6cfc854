import { CsvRecordsStream } from "../format/csv-records.ts";
import type { CopiedRecords, PassthroughFactory, RecordsReader, RecordsStream } from "../rows/batch.ts";
import { NotTheJson } from "../rows/json-bytes.ts";
import type { Column } from "../rows/types.ts";
import { CsvRow } from "./csv-row.ts";
import { kindOf } from "./values.ts";

// Pages after the first asked as CKAN's CSV records (`records_format: "csv"`): one JSON string,
// read as its answer arrives (csv-records.ts's CsvRecordsStream hands over whole rows a segment at a
// time), each segment's text read by JSON.parse natively, its rows folded as they are cut: each cell
// a stretch of that text (csv-row.ts), no array and no string per row, no page held. Far cheaper than
// walking a page of JSON lists value by value, and the pages are smaller on the wire. A page is read
// when the paging loop reaches it, so rows are folded in table order.

const EMPTY = new Uint8Array(0);
const utf8 = new TextDecoder();

/**
 * Cuts PostgreSQL's CSV (LF rows, quotes doubled, null an empty unquoted cell) into `row`'s cells
 * and hands `onRow` each row in turn. Returns the rows read and the text of the last row's cell
 * `idAt` (keyset paging's `_id`: the page's last), if asked.
 */
export function csvRows(
  csv: string,
  row: CsvRow,
  onRow: (row: CsvRow) => void,
  idAt = -1,
): { rows: number; lastId: string | undefined } {
  const width = row.width;
  const n = csv.length;
  row.text = csv;
  let i = 0;
  let count = 0;
  while (i < n) {
    for (let c = 0; c < width; c++) {
      i = c < width - 1 ? cutCell(csv, i, row, c, 44) : cutCell(csv, i, row, c, 10);
      i++;
    }
    onRow(row);
    count++;
  }
  return { rows: count, lastId: count === 0 || idAt < 0 ? undefined : row.textOf(idAt) };
}

/** Cell `c` of `row` from csv[i]: its stretch, quoted or not. Returns where its delimiter (`end`, a comma or LF) is. */
function cutCell(csv: string, i: number, row: CsvRow, c: number, end: number): number {
  if (row.own[c] !== undefined) row.own[c] = undefined;
  let after: number;
  if (csv.charCodeAt(i) === 34) {
    row.quoted[c] = 1;
    let close = csv.indexOf('"', i + 1);
    if (close < 0) throw new NotTheJson("unterminated quoted cell");
    if (csv.charCodeAt(close + 1) === 34) {
      close = doubledQuotes(csv, i, close, row, c);
    } else {
      row.starts[c] = i + 1;
      row.ends[c] = close;
    }
    after = close + 1;
  } else {
    // PostgreSQL quotes a cell holding a comma or a line break: an unquoted one ends at the next
    // comma, or the last one at the line's end (found by the runtime's own search).
    row.quoted[c] = 0;
    after = csv.indexOf(end === 44 ? "," : "\n", i);
    if (after < 0) after = csv.length;
    row.starts[c] = i;
    row.ends[c] = after;
  }
  if (csv.charCodeAt(after) !== end && !(end === 10 && after === csv.length))
    throw new NotTheJson("a CSV row of another width");
  return after;
}

/** A quoted cell in which CKAN doubled quotes: its text, undoubled, becomes the cell's own. Returns its closing quote. */
function doubledQuotes(csv: string, open: number, quote: number, row: CsvRow, c: number): number {
  let text = "";
  let from = open + 1;
  for (;;) {
    if (quote < 0) throw new NotTheJson("unterminated quoted cell");
    if (csv.charCodeAt(quote + 1) === 34) {
      text += csv.slice(from, quote + 1);
      from = quote + 2;
      quote = csv.indexOf('"', from);
      continue;
    }
    text += csv.slice(from, quote);
    row.own[c] = text;
    row.starts[c] = 0;
    row.ends[c] = text.length;
    return quote;
  }
}

/**
 * Past the JSON string at `at`: its closing quote found by the runtime's own byte search, a quote
 * escaped by an odd run of backslashes skipped (a page is megabytes; walking it byte by byte in
 * JavaScript cost more than reading its cells).
 */
export function stringEnd(b: Uint8Array, at: number): number {
  let from = at + 1;
  for (;;) {
    const quote = b.indexOf(34, from);
    if (quote < 0) throw new NotTheJson("unterminated string");
    let backslashes = 0;
    while (b[quote - 1 - backslashes] === 92) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
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
      if (answer[at] !== 34) throw new NotTheJson("expected the records string");
      const end = stringEnd(answer, at);
      const csv = JSON.parse(utf8.decode(answer.subarray(at, end))) as string;
      const read = csvRows(csv, row, fold, idAt);
      return { page: { bytes: EMPTY, rows: read.rows, ends: new Uint32Array(read.rows) }, end, lastId: read.lastId };
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
