import { csvCell } from "./csv.ts";
import { guardFormula, isNumericType } from "./guard.ts";
import { pgArrayToJson } from "./pg-array.ts";
import type { PassedPage } from "./batch.ts";
import type { Column } from "./types.ts";

/** How one incoming column is written: as is, guarded text, a boolean, an array, JSON, or not at all. */
type Action = "copy" | "text" | "bool" | "array" | "json" | "drop";

const LF = 10;
const QUOTE = 34;


/**
 * Rewrites CKAN's `records_format: "csv"` page (PostgreSQL COPY output: LF rows, `t`/`f`, arrays as
 * `{a,b}`, NULL as an empty unquoted cell) into this worker's CSV: CRLF rows, true/false, arrays as
 * JSON, the formula guard at text cell starts. Unchanged stretches are copied in bulk, so a page
 * costs one scan instead of a JSON parse of every value plus a CSV writer.
 *
 * `incoming` are the columns as requested (output columns, then any to drop, such as `_id`).
 */
export function csvPassthrough(incoming: Column[], dropFrom: number, formulaGuard: boolean): (page: string) => PassedPage {
  const actions: Action[] = incoming.map((c, i) => {
    if (i >= dropFrom) return "drop";
    if (c.type === "bool") return "bool";
    if (c.type.startsWith("_")) return "array";
    if (c.type === "json" || c.type === "jsonb") return "json";
    return formulaGuard && !isNumericType(c.type) ? "text" : "copy";
  });
  const elementTypes = incoming.map((c) => c.type.slice(1));
  const last = incoming.length - 1;

  return (page) => {
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
      // Most cells stay as they are: a copied column, or text that cannot start a formula.
      if (action !== "copy" && !(action === "text" && !startsFormula(page.charCodeAt(quoted ? start + 1 : start)))) {
        const cell = rewrite(action, page, start, end, quoted, elementTypes[column] ?? "text");
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

/** The new text of one cell, DROP, or undefined when the cell stays as it is (the common case). */
function rewrite(action: Action, page: string, start: number, end: number, quoted: boolean, elementType: string): string | undefined | typeof DROP {
  if (action === "drop") return DROP;
  if (action === "bool") {
    const c = end - start === 1 ? page.charCodeAt(start) : 0;
    return c === 0x74 ? "true" : c === 0x66 ? "false" : undefined;
  }
  const raw = quoted ? page.slice(start + 1, end - 1).replaceAll('""', '"') : page.slice(start, end);
  if (action === "text") {
    const guarded = raw === "" ? raw : guardFormula(raw);
    return guarded === raw ? undefined : csvCell(guarded);
  }
  if (action === "json") {
    // JSON null comes back from CKAN's JSON as null, which the row encoder writes as an empty cell.
    return raw === "null" && !quoted ? "" : undefined;
  }
  return raw === "" && !quoted ? "" : csvCell(pgArrayToJson(raw, elementType));
}
