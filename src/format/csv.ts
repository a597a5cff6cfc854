import Papa from "papaparse";
import { guardFormula } from "./guard.ts";
import { isJsonType, isNumericType, PLAIN_NUMBER } from "../rows/values.ts";
import type { Column, Row } from "../rows/types.ts";
import type { CsvOptions } from "../query/formats.ts";
import type { Encoder } from "./types.ts";

const CRLF = "\r\n";
const BOM = "\ufeff";
const QUOTE = 34;

/**
 * The one quoting rule, papaparse's: a cell is quoted when it holds the delimiter, a quote, CR, LF or
 * a BOM, starts or ends with a space, or is an empty string (`""`, told apart from null, which is
 * an empty cell).
 */
const writerOptions = (delimiter: string) =>
  ({
    delimiter,
    newline: CRLF,
    header: false,
    quotes: (value: unknown) => value === "",
    escapeFormulae: false,
  }) as const;

const COMMA_WRITER = writerOptions(",");

/** One cell as the CSV writer quotes it: for the few cells the pass-through rewrites. */
export const csvCell = (text: string): string => Papa.unparse([[text]], COMMA_WRITER);

/**
 * A cell's CSV text from CKAN's JSON text for it: null is an empty cell, text is unescaped (and
 * guarded), numbers and booleans stay as CKAN wrote them, arrays and json stay JSON text.
 */
// A null is an empty cell: papaparse writes undefined as nothing.
function cellText(raw: string | undefined, json: boolean, guarded: boolean): string | undefined {
  if (raw === undefined || raw === "null") return undefined;
  if (json || raw.charCodeAt(0) !== QUOTE) return raw;
  const text = raw.includes("\\") ? (JSON.parse(raw) as string) : raw.slice(1, -1);
  return guarded ? guardFormula(text) : text;
}

/**
 * A number's text with a decimal comma: `-0.50` -> `-0,50`, `1.5e-07` -> `1,5e-07`. Only a plain
 * number takes one: `money`'s `$1,234.56` and `NaN` stay as CKAN wrote them.
 */
const decimalComma = (text: string | undefined): string | undefined =>
  text === undefined || !PLAIN_NUMBER.test(text) ? text : text.replace(".", ",");

/** The header row's text: each column's id, or its data dictionary label where it has one. */
export const headerText = (columns: Column[], header: CsvOptions["header"]): string[] =>
  columns.map((c) => (header === "label" && c.label !== undefined ? c.label : c.id));

/**
 * RFC 4180 CSV (or TSV with the tab delimiter) written by papaparse: CRLF after every row, quotes
 * only where a cell needs them. Cells are rewritten in place before papaparse sees them, so each
 * value is converted exactly once.
 */
export function csvEncoder(columns: Column[], options: CsvOptions, continued?: { rows: number }): Encoder<string> {
  // Judged by the value, whatever the column's type: a number column's cell may hold any text.
  const guarded = columns.map(() => options.formulaGuard);
  const json = columns.map((c) => isJsonType(c.type));
  const comma = columns.map((c) => options.decimal === "," && isNumericType(c.type));
  const writer = writerOptions(options.delimiter);
  const unparse = (rows: (string | undefined)[][]): string => Papa.unparse(rows, writer) + CRLF;

  return {
    begin() {
      if (continued !== undefined) return "";
      const prefix = options.bom ? BOM : "";
      if (options.header === "none") return prefix;
      const header = headerText(columns, options.header).map((text) =>
        options.formulaGuard ? guardFormula(text) : text,
      );
      return prefix + unparse([header]);
    },
    page(rows: Row[]) {
      if (rows.length === 0) return "";
      for (const row of rows) {
        // Trailing cells beyond the columns (`_id` kept for keyset paging) are dropped here, in place.
        row.length = columns.length;
        for (let i = 0; i < row.length; i++) {
          const text = cellText(row[i] ?? undefined, json[i]!, guarded[i]!);
          row[i] = comma[i] ? decimalComma(text) : text;
        }
      }
      return unparse(rows);
    },
    end: () => "",
    failure: (reason) => unparse([[`#EXPORT INCOMPLETE: ${reason} The rows above are only part of the export.`]]),
  };
}
