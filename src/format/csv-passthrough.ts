import { guardFormula, isNumericType } from "./guard.ts";
import { pgArrayToJson } from "./pg-array.ts";
import type { Column, PassedPage } from "./types.ts";

/** How one incoming column is written: as is, guarded text, a boolean, an array, JSON, or not at all. */
type Action = "copy" | "text" | "bool" | "array" | "json" | "drop";

const COMMA = 44;
const LF = 10;
const QUOTE = 34;

const quoteCell = (text: string): string => (/[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text);

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
    while (at < length) {
      const start = at;
      let end: number; // index of the delimiter (or newline) after the cell
      if (page.charCodeAt(at) === QUOTE) {
        let close = page.indexOf('"', at + 1);
        while (close >= 0 && page.charCodeAt(close + 1) === QUOTE) close = page.indexOf('"', close + 2);
        end = close < 0 ? length : close + 1;
      } else {
        end = at;
        for (let c = page.charCodeAt(end); end < length && c !== COMMA && c !== LF; c = page.charCodeAt(++end));
      }
      const action = actions[column] ?? "drop";
      if (action !== "copy") {
        const quoted = page.charCodeAt(start) === QUOTE;
        const raw = quoted ? page.slice(start + 1, end - 1).replaceAll('""', '"') : page.slice(start, end);
        let cell: string | undefined;
        if (action === "text") {
          const guarded = raw === "" ? raw : guardFormula(raw);
          if (guarded !== raw) cell = quoteCell(guarded);
        } else if (action === "bool") {
          cell = raw === "t" ? "true" : raw === "f" ? "false" : undefined;
        } else if (action === "json") {
          // JSON null comes back from CKAN's JSON as null, which the row encoder writes as an empty cell.
          if (raw === "null" && !quoted) cell = "";
        } else if (action === "array") {
          cell = raw === "" && !quoted ? "" : quoteCell(pgArrayToJson(raw, elementTypes[column] ?? "text"));
        } else {
          // Dropped: the delimiter before it goes too.
          out += page.slice(from, start - 1);
          from = end;
        }
        if (cell !== undefined) {
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
