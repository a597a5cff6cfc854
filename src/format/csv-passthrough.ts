import { csvCell } from "./csv.ts";
import { guardFormula, isJsonType, isNumericType } from "./guard.ts";
import type { PassedPage } from "./batch.ts";
import type { Column } from "./types.ts";

/** How one incoming column is written: as is, text (guarded or not), a boolean, JSON text, or not at all. */
type Action = "copy" | "text" | "guarded" | "bool" | "json" | "drop";

const LF = 10;
const QUOTE = 34;
const SPACE = 32;

/**
 * Rewrites CKAN's `records_format: "csv"` page into exactly the bytes the row encoder writes for
 * the same values (one rule for every page). CKAN's CSV differs from ours in few places: LF rows
 * (ours CRLF), `t`/`f` (ours true/false), the literal `null` for a null array or json (ours an empty
 * cell), no quotes around a cell with edge spaces or a BOM (papaparse quotes those), and no formula
 * guard. Arrays and json are JSON text in both, numbers and timestamps the same text. Unchanged
 * stretches are copied in bulk, so a page costs one scan instead of a parse and a CSV writer.
 *
 * `incoming` are the columns as requested (output columns, then any to drop, such as `_id`).
 */
export function csvPassthrough(incoming: Column[], dropFrom: number, formulaGuard: boolean): (page: string) => PassedPage {
  const actions: Action[] = incoming.map((c, i) => {
    if (i >= dropFrom) return "drop";
    if (c.type === "bool") return "bool";
    if (isJsonType(c.type)) return "json";
    if (isNumericType(c.type)) return "copy";
    return formulaGuard ? "guarded" : "text";
  });
  const last = incoming.length - 1;

  return (page) => {
    // A BOM anywhere in a cell makes papaparse quote it; most pages hold none, and skip the check.
    const bom = page.includes("\ufeff");
    let out = "";
    let from = 0; // start of the stretch not yet copied to `out`
    let rows = 0;
    let column = 0;
    let at = 0;
    const length = page.length;
    // Native indexOf is much faster than a JavaScript loop over characters; both are kept until passed.
    let comma = -1;
    let newline = -1;
    // Not found is remembered as the end of the page: searching again for every later cell is quadratic.
    const find = (char: string, from: number): number => {
      const index = page.indexOf(char, from);
      return index < 0 ? length : index;
    };
    while (at < length) {
      const start = at;
      const quoted = page.charCodeAt(at) === QUOTE;
      let end: number; // index of the delimiter (or newline) after the cell
      if (quoted) {
        let close = page.indexOf('"', at + 1);
        while (close >= 0 && page.charCodeAt(close + 1) === QUOTE) close = page.indexOf('"', close + 2);
        end = close < 0 ? length : close + 1;
      } else {
        if (comma < at) comma = find(",", at);
        if (newline < at) newline = find("\n", at);
        end = Math.min(comma, newline);
      }
      const action = actions[column] ?? "drop";
      // Most cells stay as they are: numbers, and text that neither starts a formula nor needs quotes.
      if (action !== "copy" && mayChange(action, page, start, end, quoted, bom)) {
        const cell = rewrite(action, page, start, end, quoted);
        if (cell === DROP) {
          // Dropped: the delimiter before it goes too.
          out += page.slice(from, start - 1);
          from = end;
        } else if (cell !== undefined) {
          out += page.slice(from, start) + cell;
          from = end;
        }
      }
      if (end >= length || page.charCodeAt(end) === LF) {
        out += `${page.slice(from, end)}\r\n`;
        from = end + 1;
        rows++;
        column = 0;
      } else {
        column = Math.min(column + 1, last + 1);
      }
      at = end + 1;
    }
    return { text: out, rows };
  };
}

const DROP = Symbol("drop");

/** Characters that can start a formula (see guard.ts); a cell starting with anything else is never touched. */
const startsFormula = (c: number): boolean =>
  c === 0x3d || c === 0x2b || c === 0x2d || c === 0x40 || c === 0x09 || c === 0x0d || c === 0x0a || (c >= 0xff0b && (c === 0xff1d || c === 0xff0b || c === 0xff0d || c === 0xff20));

/**
 * Whether a cell may read differently from the row encoder's: a boolean, a `null` literal, a formula
 * start, or an unquoted cell that papaparse would quote (edge spaces, a BOM). Cheap checks only.
 */
function mayChange(action: Action, page: string, start: number, end: number, quoted: boolean, bom: boolean): boolean {
  if (action === "bool" || action === "drop") return true;
  // An empty cell is null (the character after it is the next delimiter or the row's LF, not its start).
  if (end === start) return false;
  if (action === "guarded" && startsFormula(page.charCodeAt(quoted ? start + 1 : start))) return true;
  if (quoted) return false;
  if (action === "json" && page.charCodeAt(start) === 0x6e) return true; // n: null
  return page.charCodeAt(start) === SPACE || page.charCodeAt(end - 1) === SPACE || (bom && page.slice(start, end).includes("\ufeff"));
}

/** The new text of one cell, DROP, or undefined when the cell stays as it is. */
function rewrite(action: Action, page: string, start: number, end: number, quoted: boolean): string | undefined | typeof DROP {
  if (action === "drop") return DROP;
  if (action === "bool") {
    const c = end - start === 1 ? page.charCodeAt(start) : 0;
    return c === 0x74 ? "true" : c === 0x66 ? "false" : undefined;
  }
  const raw = quoted ? page.slice(start + 1, end - 1).replaceAll('""', '"') : page.slice(start, end);
  // A null array or json value is the literal `null` in CKAN's CSV (a JSON null inside is quoted text).
  if (action === "json" && !quoted && raw === "null") return "";
  const cell = csvCell(action === "guarded" ? guardFormula(raw) : raw);
  return cell === page.slice(start, end) ? undefined : cell;
}
