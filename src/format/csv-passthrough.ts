import { grownBytes, grownEnds, rowEnds, type RecordsReader } from "../rows/batch.ts";
import { copiedPage, pageBuffer, readCell, scanned } from "./csv-records.ts";
import { isJsonType, isPlainNumber } from "../rows/values.ts";
import { BACKSLASH, COMMA, CR, LF, NotTheJson, QUOTE, SPACE, TAB } from "../rows/json-bytes.ts";
import type { Column } from "../rows/types.ts";

/** How one incoming column is written: text (guarded or not), a boolean, JSON text, or not at all. */
const Action = { Text: 0, Guarded: 1, Bool: 2, Json: 3, Drop: 4 } as const;
type Action = (typeof Action)[keyof typeof Action];

const APOSTROPHE = 39;
const TRUE = new TextEncoder().encode("true");
const FALSE = new TextEncoder().encode("false");

/**
 * CKAN's `records_format: "csv"` page, read from the answer's bytes and written as exactly the bytes
 * the row encoder writes for the same values (with `delimiter` between cells: a comma, or TSV's tab,
 * a semicolon or a pipe) (one rule for every page; a spec holds the two side by
 * side on real CKAN answers). One pass reads the cells (csv-records.ts, CKAN's quoting kept) and
 * rewrites those that differ. CKAN's CSV differs from ours in few places: LF rows
 * (ours CRLF), `t`/`f` (ours true/false), the literal `null` for a null array or json (ours an empty
 * cell), no quotes around a cell with edge spaces or a BOM (papaparse quotes those), and no formula
 * guard. Everything else is copied byte for byte: no text is decoded or encoded.
 *
 * `incoming` are the columns as requested (output columns, then any to drop, such as `_id`).
 */
export function csvRecordsReader(
  incoming: Column[],
  dropFrom: number,
  formulaGuard: boolean,
  delimiter = ",",
): RecordsReader {
  const separator = separatorOf(delimiter);
  const width = incoming.length;
  const how: Passthrough = {
    actions: incoming.map((c, i) => actionOf(c, i >= dropFrom, formulaGuard)),
    width,
    // What a row can grow by: "false" for "f", a guard's apostrophe and two quotes per cell, CRLF.
    growth: 5 * width + 2,
    separator,
    requote: separator !== COMMA,
    formulaGuard,
    bytesPerRow: 0,
  };
  return (b, at) => readPage(b, at, how);
}

/** How one reader writes its pages, and what its pages so far tell of the next one's size. */
interface Passthrough {
  actions: Action[];
  width: number;
  growth: number;
  separator: number;
  requote: boolean;
  formulaGuard: boolean;
  bytesPerRow: number;
}

/** One page's CSV records (the JSON string at `at`), rewritten: see csvRecordsReader. */
function readPage(b: Uint8Array, at: number, how: Passthrough): ReturnType<RecordsReader> {
  const { actions, width, growth, separator, requote, formulaGuard } = how;
  if (b[at] !== QUOTE) throw new NotTheJson("records are not a string");
  const length = b.length;
  let out = pageBuffer(length - at, how.bytesPerRow, growth);
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
    if (column === 0 && b[i] === QUOTE) break; // the end of the records string (after a row's LF, or of an empty page)
    if (column === 0 && o + (length - i) + growth > out.length) out = grownBytes(out, o, length - i + growth);
    const action = column < width ? actions[column]! : Action.Drop;
    if (column > 0 && action !== Action.Drop) out[o++] = separator;
    const cellAt = i;
    const cell = o;
    readCell(b, i, out, o, true, false);
    i = scanned.i;
    o = scanned.o;
    let quoted = scanned.quoted;
    if (column === width - 1) {
      lastStart = cellAt;
      lastEnd = i;
      if (firstStart < 0) firstStart = cellAt;
    }
    // PostgreSQL's COPY quotes a lone column's value `\.` (its end-of-data marker); papaparse does not.
    if (quoted && width === 1 && unquotedMarker(out, cell, o)) {
      o = cell + 2;
      quoted = false;
    }
    if (action === Action.Drop) o = cell;
    else if (o > cell && !keptAsIs(out, cell, o, quoted, action))
      o = rewriteCell(out, cell, o, quoted, action, scanned.bom, formulaGuard);
    if (requote && action !== Action.Drop && o > cell) o = requoteCell(out, cell, o, separator);
    if (scanned.ended) {
      out[o++] = CR;
      out[o++] = LF;
      if (rows === ends.length) ends = grownEnds(ends);
      ends[rows++] = o;
      column = 0;
    } else {
      column++;
    }
  }
  if (column !== 0) throw new NotTheJson("the last row has no line end");
  if (rows > 0) how.bytesPerRow = (i - at) / rows;
  return copiedPage(out, o, ends, rows, i + 1, { b, firstStart, lastStart, lastEnd });
}

/**
 * Bytes a cell can start with and be written as it came: none that starts a formula, leads one
 * (spaces and invisible characters: their UTF-8 lead bytes) or needs quotes at a cell's edge.
 */
const PLAIN_START = new Uint8Array(256).fill(1);
for (const c of [SPACE, TAB, LF, 0x0b, 0x0c, CR, 0x3d, 0x40, 0x2b, 0x2d, 0xc2, 0xe1, 0xe2, 0xe3, 0xef])
  PLAIN_START[c] = 0;

/**
 * Most text cells need no rewriting, and a test of their first and last bytes says so: rewriteCell's
 * whole judgement, for the common case, without a call per cell (measured: a fifth of a page's time).
 */
function keptAsIs(out: Uint8Array, cell: number, end: number, quoted: boolean, action: Action): boolean {
  if (action !== Action.Text && action !== Action.Guarded) return false;
  if (quoted) return PLAIN_START[out[cell + 1]!] === 1;
  return PLAIN_START[out[cell]!] === 1 && out[end - 1] !== SPACE && !scanned.bom;
}

/** The one byte between cells (a comma, a tab, a semicolon, a pipe): ASCII, never a quote or a line break. */
function separatorOf(delimiter: string): number {
  const separator = delimiter.charCodeAt(0);
  if (delimiter.length !== 1 || separator > 0x7f || separator === QUOTE || separator === CR || separator === LF)
    throw new RangeError(`no byte pass-through for the delimiter ${JSON.stringify(delimiter)}`);
  return separator;
}

function actionOf(column: Column, dropped: boolean, formulaGuard: boolean): Action {
  if (dropped) return Action.Drop;
  if (column.type === "bool") return Action.Bool;
  if (isJsonType(column.type)) return Action.Json;
  // The guard judges the value, not the column's type: a number column's cell may be any text, and
  // is quoted for an edge space or a BOM as papaparse quotes it, guard or none.
  return formulaGuard ? Action.Guarded : Action.Text;
}

/** Whether the quoted cell at out[cell, end) is `"\."`: if so it is rewritten bare, `\.`, at out[cell, cell + 2). */
function unquotedMarker(out: Uint8Array, cell: number, end: number): boolean {
  if (end - cell !== 4 || out[cell + 1] !== BACKSLASH || out[cell + 2] !== 0x2e) return false;
  out[cell] = BACKSLASH;
  out[cell + 1] = 0x2e;
  return true;
}

/**
 * The cell CKAN wrote, now in out[cell, end), rewritten in place where ours differs; returns its new
 * end. Most cells stay as they are: text that neither starts a formula nor needs quotes CKAN did not
 * give it (the row has room: see `growth`).
 */
function rewriteCell(
  out: Uint8Array,
  cell: number,
  end: number,
  quoted: boolean,
  action: Action,
  bom: boolean,
  guard: boolean,
): number {
  if (action === Action.Bool && end - cell === 1) {
    const word = out[cell] === 0x74 ? TRUE : out[cell] === 0x66 ? FALSE : undefined;
    if (word !== undefined) {
      out.set(word, cell);
      return cell + word.length;
    }
  }
  // Any other cell of any column is guarded by its value (a bool column's cell may hold any text too).
  if (quoted) {
    // CKAN quoted it for a comma, quote or line break: papaparse quotes it too, the guard goes inside.
    if (!guard || !startsFormula(out, cell + 1, end - 1)) return end;
    out.copyWithin(cell + 2, cell + 1, end);
    out[cell + 1] = APOSTROPHE;
    return end + 1;
  }
  // A null array or json value is the literal `null` in CKAN's CSV (a JSON null inside is quoted text).
  if (
    action === Action.Json &&
    end - cell === 4 &&
    out[cell] === 0x6e &&
    out[cell + 1] === 0x75 &&
    out[cell + 2] === 0x6c &&
    out[cell + 3] === 0x6c
  )
    return cell;
  if (guard && startsFormula(out, cell, end)) {
    out.copyWithin(cell + 1, cell, end);
    out[cell] = APOSTROPHE;
    end++;
  }
  // Papaparse also quotes a cell with an edge space or a BOM (no quote is inside: CKAN would have quoted it).
  if (out[cell] !== SPACE && out[end - 1] !== SPACE && !(bom && hasBom(out, cell, end))) return end;
  out.copyWithin(cell + 1, cell, end);
  out[cell] = QUOTE;
  out[end + 1] = QUOTE;
  return end + 2;
}

/**
 * A cell as written for the comma, now at out[cell, end), as papaparse writes it between other
 * delimiters; returns its new end. A quoted cell stays quoted only for what still needs it there (a
 * quote, a line break, a BOM, an edge space, the delimiter, or nothing at all: `""`); CKAN quoted
 * the others for their commas. An unquoted one is quoted when it holds the delimiter (CKAN's CSV
 * leaves a tab or a semicolon bare).
 */
function requoteCell(out: Uint8Array, cell: number, end: number, separator: number): number {
  if (out[cell] !== QUOTE) {
    if (out.subarray(cell, end).indexOf(separator) < 0) return end;
    out.copyWithin(cell + 1, cell, end);
    out[cell] = QUOTE;
    out[end + 1] = QUOTE;
    return end + 2;
  }
  const first = cell + 1;
  const last = end - 1;
  if (last === first || out[first] === SPACE || out[last - 1] === SPACE) return end;
  for (let k = first; k < last; k++) {
    const c = out[k];
    if (
      c === QUOTE ||
      c === CR ||
      c === LF ||
      c === separator ||
      (c === 0xef && out[k + 1] === 0xbb && out[k + 2] === 0xbf)
    )
      return end;
  }
  out.copyWithin(cell, first, last);
  return end - 2;
}

/**
 * Where the text from `i` goes on past leading spaces and invisible characters (see guard.ts's
 * LEADING), in UTF-8: space, tab, LF, VT, FF, CR, NBSP, U+1680, U+180E, U+2000-U+200F,
 * U+2028-U+202F, U+205F-U+2064, U+2066-U+206F, U+3000, the BOM.
 */
function pastLeading(csv: Uint8Array, i: number, end: number): number {
  while (i < end) {
    const c = csv[i]!;
    const d = csv[i + 1];
    const e = csv[i + 2] ?? 0;
    if (c === SPACE || (c >= TAB && c <= CR)) i++;
    else if (c === 0xc2 && d === 0xa0) i += 2;
    else if (c === 0xe1 && ((d === 0x9a && e === 0x80) || (d === 0xa0 && e === 0x8e))) i += 3;
    else if (c === 0xe2 && d === 0x80 && ((e >= 0x80 && e <= 0x8f) || (e >= 0xa8 && e <= 0xaf))) i += 3;
    else if (c === 0xe2 && d === 0x81 && (e === 0x9f || (e >= 0xa0 && e <= 0xa4) || (e >= 0xa6 && e <= 0xaf))) i += 3;
    else if (c === 0xe3 && d === 0x80 && e === 0x80) i += 3;
    else if (c === 0xef && d === 0xbb && e === 0xbf) i += 3;
    else break;
  }
  return i;
}

/**
 * Whether the text in [start, end) starts as a formula would, as guard.ts judges it: a trigger (`=`,
 * `+`, `-`, `@`, tab, CR, LF, their full-width and small forms) first, or one past leading spaces
 * and invisible characters (tab, CR and LF among them there); not a plain number (`-12.5`).
 */
function startsFormula(csv: Uint8Array, start: number, end: number): boolean {
  if (start >= end) return false;
  const first = triggerAt(csv, start);
  if (first !== Trigger.None) return first === Trigger.Always || !isPlainNumber(csv, start, end);
  const at = pastLeading(csv, start, end);
  if (at === start || at >= end) return false;
  const after = triggerAt(csv, at);
  return after === Trigger.Always || (after === Trigger.Sign && !isPlainNumber(csv, at, end));
}

const Trigger = { None: 0, Always: 1, Sign: 2 } as const;
type Trigger = (typeof Trigger)[keyof typeof Trigger];

/** Whether the character at `at` starts a formula: always, or as a sign (`+`, `-`: not before a plain number). */
function triggerAt(csv: Uint8Array, at: number): Trigger {
  const c = csv[at];
  if (c === 0x3d || c === 0x40 || c === TAB || c === CR || c === LF) return Trigger.Always;
  if (c === 0x2b || c === 0x2d) return Trigger.Sign;
  if (c !== 0xef) return Trigger.None;
  const d = csv[at + 1];
  const e = csv[at + 2];
  // U+FF1D, U+FF0B, U+FF0D, U+FF20 (full width) and U+FE66, U+FE62, U+FE63, U+FE6B (small) in UTF-8.
  if (d === 0xbc) return e === 0x9d || e === 0x8b || e === 0x8d || e === 0xa0 ? Trigger.Always : Trigger.None;
  return d === 0xb9 && (e === 0xa6 || e === 0xa2 || e === 0xa3 || e === 0xab) ? Trigger.Always : Trigger.None;
}

function hasBom(csv: Uint8Array, start: number, end: number): boolean {
  for (let k = start; k + 2 < end; k++) if (csv[k] === 0xef && csv[k + 1] === 0xbb && csv[k + 2] === 0xbf) return true;
  return false;
}
