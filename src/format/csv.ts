import Papa from "papaparse";
import { guardFormula, isNumericType } from "./guard.ts";
import type { Column, CsvOptions, Encoder, Row } from "./types.ts";

const CRLF = "\r\n";
const BOM = "\ufeff";

/** Text for one cell: null is empty, numbers and booleans as JSON writes them, structures as JSON. */
function cellText(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** One cell as the CSV writer quotes it: for the few cells the pass-through rewrites. */
export const csvCell = (text: string): string => Papa.unparse([[text]], { delimiter: ",", newline: CRLF, quotes: false, escapeFormulae: false });

/**
 * RFC 4180 CSV (or TSV with the tab delimiter) written by papaparse: CRLF after every row, quotes
 * only where a cell needs them. Cells are rewritten in place before papaparse sees them so each
 * value is converted exactly once.
 */
export function csvEncoder(columns: Column[], options: CsvOptions): Encoder {
  const guarded = columns.map((c) => options.formulaGuard && !isNumericType(c.type));
  // A json column holds JSON: a string in it is written as JSON text, as CKAN's own CSV does.
  const json = columns.map((c) => c.type === "json" || c.type === "jsonb");
  const unparse = (rows: string[][]): string =>
    Papa.unparse(rows, { delimiter: options.delimiter, newline: CRLF, header: false, quotes: false, escapeFormulae: false }) + CRLF;

  return {
    begin() {
      const prefix = options.bom ? BOM : "";
      if (!options.header) return prefix;
      const header = columns.map((c) => (options.formulaGuard ? guardFormula(c.id) : c.id));
      return prefix + unparse([header]);
    },
    page(rows: Row[]) {
      if (rows.length === 0) return "";
      for (const row of rows) {
        // Trailing cells beyond the columns (`_id` kept for keyset paging) are dropped here, in place.
        row.length = columns.length;
        for (let i = 0; i < row.length; i++) {
          const value = row[i];
          const text = json[i] && value !== null && value !== undefined ? JSON.stringify(value) : cellText(value);
          row[i] = guarded[i] && typeof value === "string" ? guardFormula(text) : text;
        }
      }
      return unparse(rows as string[][]);
    },
    end: () => "",
    failure: (reason) => unparse([[`#EXPORT INCOMPLETE: ${reason} The rows above are only part of the export.`]]),
  };
}
