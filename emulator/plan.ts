import type { OutputType, Version } from "./cells.ts";
import { invalidValue } from "./error-answers.ts";
import {
  checkOperations,
  flatFilters,
  parseFilterOps,
  unknownFilterKey,
  type Condition,
  type FilterNode,
} from "./filters.ts";
import type { Resource } from "./resources.ts";
import type { Table } from "./schema.ts";
import { parseSortClause, type SortKey } from "./sort.ts";
import { buildQuery, identifier, literalString } from "./sql.ts";
import { textSearch, type TextSearch } from "./text-search.ts";
import type { Params } from "./validate.ts";

// CKAN's second validation pass (datastore_validate: names checked against the table) and the
// query it would build: filter conditions, text searches and their rank columns, projection,
// order. Building the SQL also binds the filter values (sql.ts), where PostgreSQL's errors arise.

export type Source =
  | { readonly kind: "column"; readonly column: number }
  | { readonly kind: "rank"; readonly rank: number };

export interface OutputColumn {
  readonly id: string;
  readonly type: OutputType;
  readonly source: Source;
}

export interface Search {
  readonly search: TextSearch;
  /** The rank column this search adds, with the ts_rank(...) CKAN selects for it. */
  readonly rank?: { readonly name: string; readonly statement: string };
}

export interface Plan {
  readonly version: Version;
  readonly resource: Resource;
  readonly table: Table;
  readonly params: Params;
  /** The parsed filters (2.12 echoes them as `filterops`). */
  readonly filters: FilterNode | undefined;
  readonly condition: Condition | undefined;
  /** Every text condition; those with a `rank` also add a rank column. */
  readonly searches: readonly Search[];
  /** Rank column names in the order CKAN adds them; `Source.rank` indexes this list. */
  readonly ranks: readonly string[];
  readonly output: readonly OutputColumn[];
  readonly order: readonly SortKey[];
}

export function plan(params: Params, resource: Resource, version: Version): Plan {
  const table = resource.table;
  const extra = params.extras[0];
  if (extra !== undefined) throw invalidValue("__extras", extra);

  const language = typeof params.echo["language"] === "string" ? (params.echo["language"] as string) : "english";
  const plain = params.echo["plain"] !== false;
  const { searches, tsQueries, textClauses } = textSearches(params, table, language, plain);
  const ranks = searches.flatMap(({ rank }) => (rank === undefined ? [] : [rank.name]));
  const output = outputColumns(params.fields, table, ranks);

  let filters: FilterNode | undefined;
  if (version === "2.12") {
    filters = parseFilterOps(params.filters, table);
  } else {
    const given = (params.filters ?? {}) as Record<string, unknown>;
    const unknownFilter = unknownFilterKey(given, table);
    if (unknownFilter !== undefined) throw invalidValue("filters", unknownFilter);
    filters = flatFilters(given, table);
  }

  const q = params.q;
  if (typeof q === "object") {
    const bad = Object.entries(q).find(
      ([key, value]) => table.columnIndex(key) === undefined || typeof value !== "string",
    );
    if (bad) throw invalidValue("q", bad[0]);
  }

  const order = sortKeys(params, table, ranks);
  if (version === "2.12") checkOperations(filters);

  const rankStatements = new Map(searches.flatMap(({ rank }) => (rank ? [[rank.name, rank.statement] as const] : [])));
  const condition = buildQuery({
    version,
    format: params.recordsFormat,
    tableId: resource.id,
    table,
    select: output.map(({ id, type }) => ({ id, type, rank: rankStatements.get(id) })),
    tsQueries,
    filters,
    textClauses,
    sort:
      params.sort === undefined
        ? ranks.map((name) => `${rankStatements.get(name) ?? ""} DESC`)
        : order.map((key) => sortSql(key, table, ranks, rankStatements)),
    limit: params.limit,
    offset: params.offset,
    distinct: params.distinct,
    keyset:
      version === "2.12" &&
      params.includeNextPage &&
      order.length === 1 &&
      order[0]?.kind === "column" &&
      order[0].column === 0
        ? order[0].desc
          ? "lt"
          : "gt"
        : undefined,
  });
  return { version, resource, table, params, filters, condition, searches, ranks, output, order };
}

function sortSql(
  key: SortKey,
  table: Table,
  ranks: readonly string[],
  statements: ReadonlyMap<string, string>,
): string {
  if (key.kind === "rank") return `${statements.get(ranks[key.rank] ?? "") ?? ""} ${key.desc ? "desc" : "asc"}`;
  return `${identifier(table.columns[key.column]?.id ?? "")} ${key.desc ? "desc" : "asc"}`;
}

/** What _textsearch_query and _where_clauses build: which searches filter rows, which add a rank. */
function textSearches(params: Params, table: Table, language: string, plain: boolean) {
  const { q, fullText } = params;
  const searches: Search[] = [];
  const tsQueries: string[] = [];
  const textClauses: string[] = [];
  const lang = literalString(language);
  const tsquery = (text: string, alias: string) =>
    `${plain ? "plainto_tsquery" : "to_tsquery"}(${lang}, ${literalString(text)}) ${identifier(alias)}`;
  const whole = (text: string) => {
    tsQueries.push(tsquery(text, "query"));
    textClauses.push('_full_text @@ "query"');
    searches.push({ search: textSearch(text), rank: { name: "rank", statement: 'ts_rank(_full_text, "query", 32)' } });
  };
  // With full_text given, a q string names the same "query" alias: only full_text counts.
  if (fullText) whole(fullText);
  if (typeof q === "string" && q !== "" && !fullText) whole(q);
  if (typeof q === "object") {
    for (const [field, term] of Object.entries(q)) {
      const column = table.columnIndex(field);
      if (column === undefined || typeof term !== "string") continue;
      const alias = `query ${field}`;
      const vector = `to_tsvector(${lang}, cast(${identifier(field)} as text))`;
      tsQueries.push(tsquery(term, alias));
      if (table.columns[column]?.type !== "text") textClauses.push(`_full_text @@ ${identifier(alias)}`);
      textClauses.push(`${vector} @@ ${identifier(alias)}`);
      searches.push({
        search: textSearch(term, column),
        rank: { name: `rank ${field}`, statement: `ts_rank(${vector}, ${identifier(alias)}, 32)` },
      });
    }
  }
  return { searches, tsQueries, textClauses };
}

function outputColumns(fields: readonly string[] | undefined, table: Table, ranks: readonly string[]): OutputColumn[] {
  const all: OutputColumn[] = [
    ...table.columns.map((column, index) => ({
      id: column.id,
      type: column.type,
      source: { kind: "column", column: index } as const,
    })),
    ...ranks.map((id, rank) => ({ id, type: "float" as const, source: { kind: "rank", rank } as const })),
  ];
  if (fields === undefined) return all;
  const byId = new Map(all.map((column) => [column.id, column]));
  const unknown = fields.find((field) => !byId.has(field));
  if (unknown !== undefined) throw invalidValue("fields", unknown);
  return fields.map((field) => byId.get(field) as OutputColumn);
}

function sortKeys(params: Params, table: Table, ranks: readonly string[]): SortKey[] {
  if (params.sort === undefined) {
    if (ranks.length > 0) return ranks.map((_, rank) => ({ kind: "rank", rank, desc: true }));
    return [{ kind: "column", column: 0, desc: false }];
  }
  return params.sort.map((clause) => {
    const key = parseSortClause(clause, table);
    if (key === undefined) throw invalidValue("sort", clause);
    return key;
  });
}
