import type { SqlRecord } from "../ckan/sql-search.ts";
import type { Filters, FilterScalar, RangeOperator } from "../query/table-query.ts";
import { isRangeFilter } from "../query/table-query.ts";
import type { Column, Row } from "../rows/types.ts";
import { outputOrder } from "./order.ts";
import type { AggregatePlan } from "./plan.ts";
import type { AggregateQuery } from "./query.ts";
import { kindOf, type Kind } from "./values.ts";

// The one SELECT ... GROUP BY an aggregate link becomes on a site with `datastore_search_sql`, built
// from the validated query only. Nothing written in the link reaches the statement as SQL text:
// - the only table is the resource id the alias maps to (a UUID the parser checked);
// - identifiers are the table's own column names (from CKAN's field list), double-quoted with
//   quotes doubled; output columns are aliased c0, c1, ... and named back here;
// - values are escaped literals (E'...', backslashes and quotes doubled), typed by the column they
//   meet as CKAN's own filters type them; a value holding NUL cannot be a PostgreSQL literal;
// - `q` is CKAN's own full-text condition, `_full_text @@ plainto_tsquery('english', ...)`;
// - functions are CKAN's default allow-list's: count, sum, avg, min, max, date_trunc, plainto_tsquery.
//   No `IN (...)` and no FILTER clause: CKAN's check reads any word before a parenthesis as a
//   function (it refuses FILTER with a 403).
// Sums and averages of floats add in `_id` order, the order the worker reads rows in.
// Every result is cast to text: CKAN writes numbers through Python floats (a numeric sum loses its
// digits, a NaN float makes it answer HTTP 500), and the text is then written as CKAN's
// datastore_search writes the column's type, so both ways give the same cells.

/** Kinds a statement groups and filters by exactly as the worker does (arrays, json and the rest stay with the worker). */
const SQL_KINDS: ReadonlySet<Kind> = new Set([
  "int",
  "bigint",
  "numeric",
  "float",
  "text",
  "date",
  "timestamp",
  "bool",
]);

export const quoteIdentifier = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/** An escaped string literal (E'' keeps its meaning whatever standard_conforming_strings says), or undefined for text holding NUL. */
export function quoteLiteral(value: FilterScalar): string | undefined {
  const text = String(value);
  if (text.includes("\u0000")) return undefined;
  return `E'${text.replaceAll("\\", "\\\\").replaceAll("'", "''")}'`;
}

const OPERATORS: Record<RangeOperator, string> = { gt: ">", gte: ">=", lt: "<", lte: "<=" };

/** CKAN's filters as SQL conditions; undefined when one cannot be written as CKAN would apply it. */
function conditions(filters: Filters, columns: Column[]): string[] | undefined {
  const out: string[] = [];
  for (const [field, value] of Object.entries(filters)) {
    const column = columns.find((c) => c.id === field);
    if (column === undefined || !SQL_KINDS.has(kindOf(column.type))) return undefined;
    const name = quoteIdentifier(field);
    if (isRangeFilter(value)) {
      for (const [op, bound] of Object.entries(value) as [RangeOperator, FilterScalar][]) {
        const literal = quoteLiteral(bound);
        if (literal === undefined) return undefined;
        out.push(`${name} ${OPERATORS[op]} ${literal}`);
      }
      continue;
    }
    const values = Array.isArray(value) ? value : [value];
    const literals = values.map(quoteLiteral);
    if (literals.some((l) => l === undefined)) return undefined;
    out.push(
      literals.length === 1 ? `${name} = ${literals[0]}` : `(${literals.map((l) => `${name} = ${l}`).join(" OR ")})`,
    );
  }
  return out;
}

export interface AggregateStatement {
  sql: string;
  /** A record of the answer (aliases c0, c1, ...) as a row of CKAN's JSON text, cell by cell. */
  row(record: SqlRecord): Row;
  /** The number of groups before LIMIT and OFFSET, which every record of the answer carries. */
  groups(record: SqlRecord): number | undefined;
}

export interface StatementOptions {
  /** The table's columns (CKAN's field list, its bookkeeping columns left out). */
  columns: Column[];
  /** CKAN before 2.12 writes timestamps to the second; 2.12 adds milliseconds. */
  before212: boolean;
  /** Most groups to ask for when the link has no limit (one more than the worker would keep). */
  maxGroups: number;
}

/** PostgreSQL's text of a timestamp (`2020-01-01 00:16:17.5`) as CKAN's datastore_search writes it. */
function timestampCell(text: string, before212: boolean): string {
  const seconds = `${text.slice(0, 10)}T${text.slice(11, 19)}`;
  if (before212) return JSON.stringify(seconds);
  return JSON.stringify(`${seconds}.${(text.slice(20, 23) || "").padEnd(3, "0")}`);
}

/** A text cell of the answer as CKAN's datastore_search writes a value of this type. */
function cellWriter(kind: Kind, bucket: boolean, before212: boolean): (text: string) => string {
  switch (kind) {
    case "int":
    case "bigint":
    case "numeric":
    case "float":
      return (text) => (/^-?(NaN|Infinity)$/.test(text) ? JSON.stringify(text) : text);
    case "bool":
      return (text) => (text === "t" || text === "true" ? "true" : "false");
    case "date":
      return (text) => JSON.stringify(text.slice(0, 10));
    case "timestamp":
      return bucket
        ? (text) => JSON.stringify(`${text.slice(0, 10)}T${text.slice(11, 19)}`)
        : (text) => timestampCell(text, before212);
    default:
      return (text) => JSON.stringify(text);
  }
}

/** The WHERE conditions: the link's filters and `q`, or undefined where one cannot be written as CKAN applies it. */
function whereOf(query: AggregateQuery, columns: Column[]): string[] | undefined {
  const where = conditions(query.filters, columns);
  if (where === undefined || query.q === undefined) return where;
  const q = quoteLiteral(query.q);
  if (q === undefined) return undefined;
  where.push(`"_full_text" @@ plainto_tsquery('english', ${q})`);
  return where;
}

/** The output columns as SQL: each expression, how ORDER BY names it, and how its text answer is written. */
interface Selected {
  expressions: string[];
  sortable: string[];
  writers: ((text: string) => string)[];
}

/** The group columns and buckets, or false for a kind the worker alone groups by. */
function selectGroups(plan: AggregatePlan, columns: Column[], before212: boolean, out: Selected): boolean {
  for (const group of plan.groups) {
    const column = columns.find((c) => c.id === group.item.column)!;
    const kind = kindOf(column.type);
    if (!SQL_KINDS.has(kind)) return false;
    const name = quoteIdentifier(column.id);
    const expression =
      group.item.bucket === undefined
        ? name
        : `date_trunc('${group.item.bucket}', ${kind === "date" ? `${name}::timestamp` : name})`;
    out.expressions.push(expression);
    out.sortable.push(kind === "text" ? `${expression} COLLATE "C"` : expression);
    out.writers.push(cellWriter(kind, group.item.bucket !== undefined, before212));
  }
  return true;
}

/** The measures, after the group columns. */
function selectMeasures(plan: AggregatePlan, columns: Column[], before212: boolean, out: Selected): void {
  const groupCount = plan.groups.length;
  for (const [i, planned] of plan.measures.entries()) {
    const { fn, column: field } = planned.measure;
    const column = field === undefined ? undefined : columns.find((c) => c.id === field)!;
    const kind = column === undefined ? undefined : kindOf(column.type);
    const argument = column === undefined ? "*" : quoteIdentifier(column.id);
    const collated = kind === "text" && (fn === "min" || fn === "max") ? `${argument} COLLATE "C"` : argument;
    // Floats add up differently in another order: in `_id` order, as the worker reads the pages
    // (PostgreSQL would otherwise add in whatever order its plan meets the rows, sorted for a GroupAggregate).
    const ordered = kind === "float" && (fn === "sum" || fn === "avg") ? `${collated} ORDER BY "_id"` : collated;
    const expression = `${fn}(${ordered})`;
    out.expressions.push(expression);
    out.sortable.push(expression);
    out.writers.push(cellWriter(plan.kinds[groupCount + i]!, false, before212));
  }
}

/** ORDER BY's keys: the link's sort, then the group columns ascending. */
function orderOf(query: AggregateQuery, plan: AggregatePlan, sortable: string[]): string[] {
  return outputOrder(plan, query.aggregate.sort).map((o) => {
    const at = plan.columns.findIndex((c) => c.id === o.name);
    // PostgreSQL's own place for nulls needs no clause (and the statement stays as it always was).
    const nulls = o.nulls === (o.descending ? "first" : "last") ? "" : ` NULLS ${o.nulls.toUpperCase()}`;
    return `${sortable[at]} ${o.descending ? "DESC" : "ASC"}${nulls}`;
  });
}

/**
 * The groups' number, in every record: a window over the grouped rows, counted before LIMIT and
 * OFFSET (CKAN's allow-list reads `count(` as the call; OVER is a keyword, written apart).
 */
const GROUPS = "(count(*) OVER ())::text";

/**
 * The statement for an aggregate, or undefined when it cannot be written as exactly what the worker
 * computes (a filter on an array or json column, a group by one, a value holding NUL): the worker
 * computes those.
 */
export function aggregateStatement(
  query: AggregateQuery,
  plan: AggregatePlan,
  options: StatementOptions,
): AggregateStatement | undefined {
  const { columns, before212 } = options;
  const where = whereOf(query, columns);
  if (where === undefined) return undefined;
  const selected: Selected = { expressions: [], sortable: [], writers: [] };
  if (!selectGroups(plan, columns, before212, selected)) return undefined;
  selectMeasures(plan, columns, before212, selected);
  const { expressions, writers } = selected;
  const order = orderOf(query, plan, selected.sortable);
  const { limit, offset } = query.aggregate;
  const parts = [
    `SELECT ${expressions.map((e, i) => `(${e})::text AS "c${i}"`).join(", ")}, ${GROUPS} AS "groups"`,
    `FROM ${quoteIdentifier(query.resourceId)}`,
    ...(where.length > 0 ? [`WHERE ${where.join(" AND ")}`] : []),
    ...(plan.groups.length > 0 ? [`GROUP BY ${expressions.slice(0, plan.groups.length).join(", ")}`] : []),
    ...(order.length > 0 ? [`ORDER BY ${order.join(", ")}`] : []),
    `LIMIT ${limit ?? options.maxGroups + 1}`,
    ...(offset > 0 ? [`OFFSET ${offset}`] : []),
  ];
  return {
    sql: parts.join(" "),
    row: (record) =>
      writers.map((write, i) => {
        const text = record[`c${i}`];
        return text === null || text === undefined ? "null" : write(text);
      }),
    groups: (record) => {
      const text = record.groups;
      return typeof text === "string" && /^\d+$/.test(text) ? Number(text) : undefined;
    },
  };
}
