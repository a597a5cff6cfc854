import { EDGE_COLUMNS, EDGE_ROWS, edgeCell } from "../emulator/edge-rows.ts";

// Reading recorded CKAN answers beside the emulator's: the records cut out of the envelope as text,
// rows of CSV or JSON records, and the totals the emulated edge table must answer where a recorded
// total counted rows the recording does not show (the real table has 200000 rows).

/** End (exclusive) of the JSON value starting at `start`. */
export function valueEnd(text: string, start: number): number {
  const first = text[start];
  if (first !== '"' && first !== "[" && first !== "{") {
    const end = text.slice(start).search(/[,\]}]/);
    return end < 0 ? text.length : start + end;
  }
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === "\\") i++;
      else if (char === '"') {
        inString = false;
        if (depth === 0) return i + 1;
      }
    } else if (char === '"') inString = true;
    else if (char === "[" || char === "{") depth++;
    else if (char === "]" || char === "}") {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return text.length;
}

/** Splits an answer into the envelope around `records` and the records' text. */
export function splitRecords(text: string): { envelope: string; records: string } {
  const key = '"records": ';
  const start = text.indexOf(key) + key.length;
  const end = valueEnd(text, start);
  return { envelope: `${text.slice(0, start)}<records>${text.slice(end)}`, records: text.slice(start, end) };
}

/** The members of a JSON array, as text. */
export function members(arrayText: string): string[] {
  const out: string[] = [];
  let i = 1;
  while (i < arrayText.length - 1) {
    const end = valueEnd(arrayText, i);
    out.push(arrayText.slice(i, end));
    i = end + 1;
  }
  return out;
}

/** Rows of CSV text (quoted cells may hold line breaks), each with its line end. */
export function csvRows(csv: string): string[] {
  const rows: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < csv.length; i++) {
    if (csv[i] === '"') quoted = !quoted;
    else if (csv[i] === "\n" && !quoted) {
      rows.push(csv.slice(start, i + 1));
      start = i + 1;
    }
  }
  return rows;
}

/** The records as a list of row texts. */
export function rowsOf(records: string): string[] {
  return records.startsWith('"') ? csvRows(JSON.parse(records) as string) : members(records);
}

const userColumns = EDGE_COLUMNS.slice(1);
export const edgeRows = Array.from({ length: EDGE_ROWS }, (_, index) =>
  userColumns.map((_, c) => edgeCell(c + 1, index)),
);
export const holdsWord = (word: string) => (row: unknown[]) =>
  row.some((cell) =>
    new RegExp(`(^|[^\\p{L}\\p{N}])${word}([^\\p{L}\\p{N}]|$)`, "iu").test(JSON.stringify(cell) ?? ""),
  );

/**
 * What `total` must be on the emulated table where the recorded count depends on rows the
 * recording does not show; undefined where the recorded total holds as it is.
 */
export const TOTALS: Record<string, () => number> = {
  keyset_first: () => EDGE_ROWS,
  limit_above_rows_max: () => EDGE_ROWS,
  total_estimation: () => EDGE_ROWS,
  include_total_default: () => edgeRows.filter((row) => row[3] === "alpha").length,
  q_csv_no_fields: () => edgeRows.filter(holdsWord("glacier")).length,
  q_lists_fields: () => edgeRows.filter(holdsWord("glacier")).length,
  q_objects_no_fields: () => edgeRows.filter(holdsWord("glacier")).length,
};
