import { invalidValue } from "./error-answers.ts";
import { compileFilters, unknownFilterKey, type Condition } from "./filters.ts";
import type { Resource } from "./resources.ts";
import { COLUMNS, columnIndex } from "./schema.ts";
import { parseSortClause, type SortKey } from "./sort.ts";
import { textSearch, type TextSearch } from "./text-search.ts";
import type { Params } from "./validate.ts";

// CKAN's second validation pass (datastore_validate: names checked against the table) and the
// query it would build: conditions, text searches and their rank columns, projection, order.

export type Source = { readonly kind: "column"; readonly column: number } | { readonly kind: "rank"; readonly rank: number };

export interface OutputColumn {
  readonly id: string;
  readonly type: string;
  readonly source: Source;
}

export interface Plan {
  readonly resource: Resource;
  readonly params: Params;
  readonly conditions: readonly Condition[];
  /** Every text condition; those with a `rank` name also add a rank column. */
  readonly searches: readonly { readonly search: TextSearch; readonly rank?: string }[];
  /** Rank column names in the order CKAN adds them; `Source.rank` indexes this list. */
  readonly ranks: readonly string[];
  readonly output: readonly OutputColumn[];
  readonly order: readonly SortKey[];
}

export function plan(params: Params, resource: Resource, rangeOps: boolean): Plan {
  const extra = params.extras[0];
  if (extra !== undefined) throw invalidValue("__extras", extra);

  const searches = textSearches(params);
  const ranks = searches.flatMap(({ rank }) => (rank === undefined ? [] : [rank]));
  const output = outputColumns(params.fields, ranks);

  const filters = params.filters ?? {};
  const unknownFilter = unknownFilterKey(filters);
  if (unknownFilter !== undefined) throw invalidValue("filters", unknownFilter);

  const q = params.q;
  if (typeof q === "object") {
    const bad = Object.entries(q).find(([key, value]) => columnIndex(key) === undefined || typeof value !== "string");
    if (bad) throw invalidValue("q", bad[0]);
  }

  const order = sortKeys(params, ranks);
  const conditions = compileFilters(filters, rangeOps, resource.id);
  return { resource, params, conditions, searches, ranks, output, order };
}

/** What _textsearch_query builds: which searches filter rows and which of them add a rank. */
function textSearches(params: Params): { search: TextSearch; rank?: string }[] {
  const { q, fullText } = params;
  const searches: { search: TextSearch; rank?: string }[] = [];
  if (fullText) searches.push({ search: textSearch(fullText), rank: "rank" });
  if (typeof q === "string" && q !== "") {
    // With full_text present, q still filters but the rank column is full_text's.
    searches.push(fullText ? { search: textSearch(q) } : { search: textSearch(q), rank: "rank" });
  } else if (typeof q === "object") {
    for (const [field, term] of Object.entries(q)) {
      const column = columnIndex(field);
      if (column !== undefined && typeof term === "string") {
        searches.push({ search: textSearch(term, column), rank: `rank ${field}` });
      }
    }
  }
  return searches;
}

function outputColumns(fields: readonly string[] | undefined, ranks: readonly string[]): OutputColumn[] {
  const all: OutputColumn[] = [
    ...COLUMNS.map((column, index) => ({ id: column.id, type: column.type, source: { kind: "column", column: index } as const })),
    ...ranks.map((id, rank) => ({ id, type: "float", source: { kind: "rank", rank } as const })),
  ];
  if (fields === undefined) return all;
  const byId = new Map(all.map((column) => [column.id, column]));
  const unknown = fields.find((field) => !byId.has(field));
  if (unknown !== undefined) throw invalidValue("fields", unknown);
  return fields.map((field) => byId.get(field) as OutputColumn);
}

function sortKeys(params: Params, ranks: readonly string[]): SortKey[] {
  if (params.sort === undefined) {
    if (ranks.length > 0) return ranks.map((_, rank) => ({ kind: "rank", rank, desc: true }));
    return [{ kind: "column", column: 0, desc: false }];
  }
  return params.sort.map((clause) => {
    const key = parseSortClause(clause);
    if (key === undefined) throw invalidValue("sort", clause);
    return key;
  });
}
