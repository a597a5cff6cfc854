import { searchText } from "./cells.ts";
import type { Table } from "./schema.ts";

// A stand-in for PostgreSQL full-text search (plainto_tsquery over `_full_text`, or over one column
// for `q: {field: term}`): a row matches when every word of the query is a word of the searched
// text. No stemming or stop words. CKAN's trigger builds `_full_text` from every user column of the
// row (row_to_json), so a whole-row search sees arrays and json as their JSON text.
//
// Ranks are ts_rank(..., 32). For a one-word query that is exact: PostgreSQL's calc_rank_or over the
// word's occurrences, all of weight D, normalised rank / (rank + 1), in float4 arithmetic. For more
// words (calc_rank_and, which depends on word distances) it is an imitation that orders and looks
// like real ranks.

export interface TextSearch {
  /** Lower-case words that must all be present. Empty: the query has no words and matches nothing. */
  readonly words: readonly string[];
  /** A column position for a per-field search (`q: {field: term}`), undefined for the whole row. */
  readonly column: number | undefined;
}

const WORD = /[\p{L}\p{N}]+/gu;
const WEIGHT_D = Math.fround(0.1);

export function words(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

export function textSearch(query: string, column?: number): TextSearch {
  return { words: [...new Set(words(query))], column };
}

/** The searchable words of a row, for a whole-row search: every user column as text. */
export function rowWords(table: Table, index: number): string[] {
  const parts: string[] = [];
  for (let column = 1; column < table.columns.length; column++) {
    parts.push(searchText(table.columns[column]?.type ?? "text", table.cell(column, index)));
  }
  return words(parts.join(" "));
}

export function columnWords(table: Table, column: number, index: number): string[] {
  return words(searchText(table.columns[column]?.type ?? "text", table.cell(column, index)));
}

/** ts_rank's calc_rank_or for one word found `count` times, normalised with flag 32. */
function singleWordRank(count: number): number {
  let sum = 0;
  for (let j = 0; j < Math.min(count, 256); j++) sum = Math.fround(sum + Math.fround(WEIGHT_D / ((j + 1) * (j + 1))));
  const raw = Math.fround(Math.fround(Math.fround(WEIGHT_D + sum) - WEIGHT_D) / 1.64493406685);
  return Math.fround(raw / Math.fround(raw + 1));
}

/** The rank of a row for one search (a float4 value), or -1 when the row does not match. */
export function rank(search: TextSearch, rowText: readonly string[]): number {
  if (search.words.length === 0) return -1;
  const counts = search.words.map((word) => {
    let count = 0;
    for (const token of rowText) if (token === word) count++;
    return count;
  });
  if (counts.some((count) => count === 0)) return -1;
  if (counts.length === 1) return singleWordRank(counts[0] ?? 0);
  const hits = counts.reduce((total, count) => total + Math.min(count, 4), 0);
  const raw = (0.0607927 * hits) / counts.length;
  return Math.fround(raw / (raw + 1));
}
