import type { CopiedRecords, PassthroughFactory } from "../rows/batch.ts";
import { NotTheJson } from "../rows/json-bytes.ts";
import type { Column, Row } from "../rows/types.ts";
import { kindOf, type Kind } from "./values.ts";

// Pages after the first asked as CKAN's CSV records (`records_format: "csv"`): one JSON string that
// JSON.parse reads natively, cut here into the cells an aggregate reads, each written as CKAN writes
// the value in `lists` records, so the groups and measures see the same cells either way. Far
// cheaper than walking a page of JSON lists value by value, and the pages are smaller on the wire.
// Each page's rows are folded as the page is read (the paging loop reads a page when it reaches it,
// in table order), one reused row at a time: no array per row, no page of rows held.

const EMPTY = new Uint8Array(0);
const utf8 = new TextDecoder();
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;

/** A CSV cell (its text, and whether CKAN quoted it) as CKAN's JSON text of the value, undefined for null. */
type Cell = (text: string, quoted: boolean) => string | undefined;

function cellOf(kind: Kind): Cell {
  switch (kind) {
    case "int":
    case "bigint":
    case "numeric":
    case "float":
      // NaN and the infinities are quoted in JSON (to_json): only they end in a letter.
      return (text, quoted) => {
        if (text === "" && !quoted) return undefined;
        const last = text.charCodeAt(text.length - 1);
        return last === 78 || last === 121 ? `"${text}"` : text;
      };
    case "bool":
      return (text) => (text === "t" ? "true" : text === "f" ? "false" : undefined);
    // Dates and timestamps hold digits, dashes, colons, a T or a space and a dot: nothing to escape.
    case "date":
    case "timestamp":
      return (text, quoted) => (text === "" && !quoted ? undefined : `"${text}"`);
    // Arrays come as their JSON text in CSV too (a null array as `null`).
    case "array":
      return (text, quoted) => (text === "" && !quoted ? undefined : text);
    default:
      return (text, quoted) =>
        text === "" && !quoted ? undefined : NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;
  }
}

/**
 * PostgreSQL's CSV (LF rows, quotes doubled, null an empty unquoted cell) handed to `onRow` row by
 * row in one reused array of `cells.length` cells; those from `keepFrom` on (keyset paging's `_id`)
 * only in the last row, whose cells are returned (they name the page's last `_id`). Returns the rows read too.
 */
export function csvRows(
  csv: string,
  cells: Cell[],
  onRow: (row: Row) => void,
  keepFrom = cells.length,
): { rows: number; last: Row } {
  const width = cells.length;
  const n = csv.length;
  let i = 0;
  let count = 0;
  const row: Row = new Array<string | undefined>(width);
  while (i < n) {
    for (let c = 0; c < width; c++) {
      let text: string;
      let quoted = false;
      if (csv.charCodeAt(i) === 34) {
        quoted = true;
        text = "";
        let from = i + 1;
        for (;;) {
          const quote = csv.indexOf('"', from);
          if (quote < 0) throw new NotTheJson("unterminated quoted cell");
          if (csv.charCodeAt(quote + 1) === 34) {
            text += csv.slice(from, quote + 1);
            from = quote + 2;
            continue;
          }
          text += csv.slice(from, quote);
          i = quote + 1;
          break;
        }
      } else {
        // PostgreSQL quotes a cell holding a comma or a line break: an unquoted one ends at the next
        // comma, or the last one at the line's end (found by the runtime's own search).
        let j = c < width - 1 ? csv.indexOf(",", i) : csv.indexOf("\n", i);
        if (j < 0) j = n;
        text = csv.slice(i, j);
        i = j;
      }
      const after = csv.charCodeAt(i);
      if (c < width - 1 ? after !== 44 : after !== 10 && i < n) throw new NotTheJson("a CSV row of another width");
      if (c < keepFrom || i + 1 >= n) row[c] = cells[c]!(text, quoted);
      i++;
    }
    onRow(row);
    count++;
  }
  return { rows: count, last: row };
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
 * The pass-through that asks later pages as CSV and hands their rows to `onRow` as each page is
 * read (in table order: a page is read when the paging loop reaches it). Each page's last `_id`
 * (keyset paging) is its last row's `_id` cell.
 */
export function csvPages(onRow: (row: Row) => void): { passthrough: PassthroughFactory } {
  const passthrough: PassthroughFactory = (incoming: Column[], dropFrom: number) => {
    const cells = incoming.map((c) => cellOf(kindOf(c.type)));
    const idAt = incoming.findIndex((c) => c.id === "_id");
    return {
      recordsFormat: "csv",
      read(answer: Uint8Array, at: number): CopiedRecords {
        if (answer[at] !== 34) throw new NotTheJson("expected the records string");
        const end = stringEnd(answer, at);
        const read = csvRows(JSON.parse(utf8.decode(answer.subarray(at, end))) as string, cells, onRow, dropFrom);
        const lastId = idAt < 0 || read.rows === 0 ? undefined : read.last[idAt];
        return { page: { bytes: EMPTY, rows: read.rows, ends: new Uint32Array(read.rows) }, end, lastId };
      },
    };
  };
  return { passthrough };
}
