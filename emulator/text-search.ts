import { COLUMNS, type Value } from "./schema.ts";
import { cellAt } from "./rows.ts";

// A stand-in for PostgreSQL full-text search (plainto_tsquery over `_full_text` or one column):
// a row matches when every word of the query is a word of the searched text. No stemming or stop
// words; ranks imitate ts_rank(..., 32) closely enough to order results and look like real ones.

export interface TextSearch {
  /** Lower-case words that must all be present. Empty: the query has no words and matches nothing. */
  readonly words: readonly string[];
  /** A COLUMNS position for a per-field search (`q: {field: term}`), undefined for the whole row. */
  readonly column: number | undefined;
}

const WORD = /[\p{L}\p{N}]+/gu;

export function words(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

export function textSearch(query: string, column?: number): TextSearch {
  return { words: [...new Set(words(query))], column };
}

function cellText(value: Value): string {
  return value === null ? "" : String(value);
}

/** The searchable words of a row, for a whole-row search: every column cast to text. */
export function rowWords(index: number): string[] {
  const parts: string[] = [];
  for (let column = 0; column < COLUMNS.length; column++) parts.push(cellText(cellAt(column, index)));
  return words(parts.join(" "));
}

export function columnWords(column: number, index: number): string[] {
  return words(cellText(cellAt(column, index)));
}

/**
 * The rank of a row for one search, or -1 when the row does not match. Like ts_rank with
 * normalisation 32 (rank / (rank + 1)), stored as a PostgreSQL `real`.
 */
export function rank(search: TextSearch, rowText: readonly string[]): number {
  if (search.words.length === 0) return -1;
  let hits = 0;
  for (const word of search.words) {
    let count = 0;
    for (const token of rowText) if (token === word) count++;
    if (count === 0) return -1;
    hits += Math.min(count, 4);
  }
  const raw = (0.0607927 * hits) / search.words.length;
  return toReal(raw / (raw + 1));
}

/** The shortest decimal that reads back as the same float4, as PostgreSQL prints a `real`. */
export function toReal(value: number): number {
  const single = Math.fround(value);
  for (let digits = 6; digits < 9; digits++) {
    const candidate = Number(single.toPrecision(digits));
    if (Math.fround(candidate) === single) return candidate;
  }
  return Number(single.toPrecision(9));
}
