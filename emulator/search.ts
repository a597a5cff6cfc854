import type { LruCache } from "./lru-cache.ts";
import { conditionMatches, type Condition } from "./filters.ts";
import type { Plan } from "./plan.ts";
import { project, type PageRow } from "./project.ts";
import { compareCells, idOrder } from "./sort.ts";
import { columnWords, rank, rowWords } from "./text-search.ts";

// Runs a plan. The common case, `_id` order with no text search and no filter but `_id` ranges,
// is arithmetic on row numbers: O(page), whatever the offset. Anything else scans the table once
// and caches the ordered row numbers, so paging through the same query does not scan again.

export interface Selection {
  /** Rows the query matches, before limit and offset. */
  readonly matched: number;
  readonly rows: readonly PageRow[];
}

/** Matching row indices in final order, with one rank array per rank column. */
export interface Matched {
  readonly indices: Int32Array;
  readonly ranks: readonly Float64Array[];
}

export function select(plan: Plan, cache: LruCache<Matched>): Selection {
  const { limit, offset, distinct } = plan.params;
  const { lo, hi, rest } = idBounds(plan.condition, plan.table.rows);
  const direction = idOrder(plan.order);
  if (rest === undefined && plan.searches.length === 0 && direction !== undefined && !distinct) {
    const matched = Math.max(0, hi - lo + 1);
    const rows: PageRow[] = [];
    for (let position = offset; position < Math.min(matched, offset + limit); position++) {
      const id = direction === "asc" ? lo + position : hi - position;
      rows.push({ index: id - 1, ranks: [] });
    }
    return { matched, rows };
  }

  const key = JSON.stringify([plan.resource.id, lo, hi, rest, plan.searches.map(({ search }) => search), plan.order]);
  let found = cache.get(key);
  if (found === undefined) {
    found = order(plan, scan(plan, lo, hi, rest));
    cache.set(key, found);
  }
  const rows: PageRow[] = [];
  for (let position = offset; position < Math.min(found.indices.length, offset + limit); position++) {
    rows.push(pageRow(found, position));
  }
  if (!distinct) return { matched: found.indices.length, rows };
  // CKAN applies DISTINCT to the page it has already cut, and to the whole match when counting.
  return { matched: distinctCount(plan, found), rows: uniqueRows(plan, rows) };
}

function pageRow(found: Matched, position: number): PageRow {
  return { index: found.indices[position] ?? 0, ranks: found.ranks.map((ranks) => ranks[position] ?? 0) };
}

/**
 * Splits `_id` comparisons that every match must meet (top-level AND) off as an inclusive id
 * range; whatever else there is gets checked per row.
 */
function idBounds(
  condition: Condition | undefined,
  rows: number,
): { lo: number; hi: number; rest: Condition | undefined } {
  let lo = 1;
  let hi = rows;
  const conjuncts = (node: Condition): Condition[] =>
    node.kind === "$and" ? node.children.flatMap(conjuncts) : [node];
  const leaves = condition === undefined ? [] : conjuncts(condition);
  const rest: Condition[] = [];
  for (const leaf of leaves) {
    const listed = leaf.kind === "leaf" && leaf.column === 0 && leaf.op === "in" ? idSpan(leaf.values) : undefined;
    if (listed !== undefined) {
      // An `_id` list bounds the scan; checked per row too unless it lists every `_id` between its ends.
      lo = Math.max(lo, listed.lo);
      hi = Math.min(hi, listed.hi);
      if (!listed.whole) rest.push(leaf);
      continue;
    }
    const value = leaf.kind === "leaf" ? leaf.values[0] : undefined;
    if (leaf.kind !== "leaf" || leaf.column !== 0 || leaf.op === "in" || typeof value !== "number") {
      rest.push(leaf);
      continue;
    }
    if (leaf.op === "eq") {
      if (!Number.isInteger(value)) return { lo: 1, hi: 0, rest: undefined };
      lo = Math.max(lo, value);
      hi = Math.min(hi, value);
    }
    if (leaf.op === "gt") lo = Math.max(lo, Math.floor(value) + 1);
    if (leaf.op === "gte") lo = Math.max(lo, Math.ceil(value));
    if (leaf.op === "lt") hi = Math.min(hi, Math.ceil(value) - 1);
    if (leaf.op === "lte") hi = Math.min(hi, Math.floor(value));
  }
  return { lo, hi, rest: rest.length === 0 ? undefined : { kind: "$and", children: rest } };
}

/** The ends of a list of `_id`s, and whether it holds every integer between them (the worker's lists do). */
function idSpan(values: readonly unknown[]): { lo: number; hi: number; whole: boolean } | undefined {
  if (values.length === 0 || !values.every((v): v is number => typeof v === "number" && Number.isInteger(v)))
    return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const lo = sorted[0]!;
  const hi = sorted.at(-1)!;
  return { lo, hi, whole: sorted.every((v, i) => v === lo + i) };
}

function scan(plan: Plan, lo: number, hi: number, rest: Condition | undefined): Matched {
  const { table } = plan;
  const indices: number[] = [];
  const ranks: number[][] = plan.ranks.map(() => []);
  const rowRanks: number[] = [];
  let index = 0;
  const cell = (column: number) => table.cell(column, index);
  rows: for (index = lo - 1; index < hi; index++) {
    if (rest !== undefined && !conditionMatches(rest, cell)) continue;
    let text: string[] | undefined;
    rowRanks.length = 0;
    for (const { search, rank: rankColumn } of plan.searches) {
      const words =
        search.column === undefined ? (text ??= rowWords(table, index)) : columnWords(table, search.column, index);
      const value = rank(search, words);
      if (value < 0) continue rows;
      if (rankColumn !== undefined) rowRanks.push(value);
    }
    indices.push(index);
    rowRanks.forEach((value, r) => ranks[r]?.push(value));
  }
  return { indices: Int32Array.from(indices), ranks: ranks.map((values) => Float64Array.from(values)) };
}

/** Sorts scanned rows (already in `_id` order) by the plan's keys, ties kept in `_id` order. */
function order(plan: Plan, scanned: Matched): Matched {
  const direction = idOrder(plan.order);
  if (direction === "asc") return scanned;
  const { indices, ranks } = scanned;
  const positions = Array.from(indices.keys());
  if (direction === "desc") {
    positions.reverse();
  } else {
    const keys = plan.order.map((key) =>
      key.kind === "column"
        ? Array.from(indices, (index) => plan.table.cell(key.column, index))
        : Array.from(ranks[key.rank] ?? []),
    );
    const types = plan.order.map((key) =>
      key.kind === "column" ? (plan.table.columns[key.column]?.type ?? "text") : "float",
    );
    // numeric text compares exactly but slowly; its nearest double orders it whenever doubles differ.
    const approx = keys.map((values, k) =>
      types[k] === "numeric" ? Float64Array.from(values, (value) => (value === null ? 0 : Number(value))) : undefined,
    );
    positions.sort((a, b) => {
      for (let k = 0; k < keys.length; k++) {
        const values = keys[k] ?? [];
        const left = values[a] ?? null;
        const right = values[b] ?? null;
        const near = approx[k];
        const desc = plan.order[k]?.desc ?? false;
        if (near !== undefined && left !== null && right !== null && near[a] !== near[b])
          return (near[a] ?? 0) < (near[b] ?? 0) !== desc ? -1 : 1;
        const cmp = compareCells(types[k] ?? "text", left, right, desc);
        if (cmp !== 0) return cmp;
      }
      return a - b;
    });
  }
  return {
    indices: Int32Array.from(positions, (position) => indices[position] ?? 0),
    ranks: ranks.map((values) => Float64Array.from(positions, (position) => values[position] ?? 0)),
  };
}

function uniqueRows(plan: Plan, rows: readonly PageRow[]): PageRow[] {
  const seen = new Set<string>();
  return rows.filter((row) => {
    const key = JSON.stringify(project(plan.table, plan.output, row));
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function distinctCount(plan: Plan, found: Matched): number {
  const seen = new Set<string>();
  for (let position = 0; position < found.indices.length; position++) {
    seen.add(JSON.stringify(project(plan.table, plan.output, pageRow(found, position))));
  }
  return seen.size;
}
