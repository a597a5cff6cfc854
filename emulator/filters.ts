import { validationError } from "./error-answers.ts";
import { compareDecimalText } from "./number-text.ts";
import type { ColumnType, Table, Value } from "./schema.ts";

// `filters` as a tree of conditions over cells.
// - CKAN 2.10 (_where_clauses): each key is one clause; a list is IN (unless the column is an
//   array), anything else is `=`, a dict included (psycopg2 then cannot adapt it).
// - CKAN 2.12 (ckanext/datastore/filters.py, FiltersParser): a scalar is `eq`, a list `in`, a dict
//   {op: value} a comparison (gt, gte, lt, lte, eq, in; more than one key ANDs them), `$and`/`$or`
//   take lists of such dicts, and a list of dicts ORs them. The parsed tree is echoed as
//   `filterops`, each node written {"op", "field", "value"}.

export type Op = "eq" | "in" | "gt" | "gte" | "lt" | "lte";
export const SQL_OPS: Record<Op, string> = { eq: "=", in: "in", gt: ">", gte: ">=", lt: "<", lte: "<=" };
const OPS = new Set<string>(Object.keys(SQL_OPS));

export type FilterNode =
  | { readonly kind: "$and" | "$or"; readonly children: readonly FilterNode[] }
  | {
      readonly kind: "leaf";
      readonly field: string;
      readonly column: number;
      readonly op: string;
      readonly raw: unknown;
    };

/** A leaf whose values PostgreSQL has read (see literal.ts). */
export interface BoundLeaf {
  readonly kind: "leaf";
  readonly column: number;
  readonly type: ColumnType;
  readonly op: Op;
  /** One value, or the members of an `in` list. A null value never matches, as in SQL. */
  readonly values: readonly Value[];
}

export type Condition = { readonly kind: "$and" | "$or"; readonly children: readonly Condition[] } | BoundLeaf;

/** CKAN 2.10: the first filter key that is not a column (`invalid value "<key>"`). */
export function unknownFilterKey(filters: Record<string, unknown>, table: Table): string | undefined {
  return Object.keys(filters).find((key) => table.columnIndex(key) === undefined);
}

/** CKAN 2.10: one clause per key, ANDed. */
export function flatFilters(filters: Record<string, unknown>, table: Table): FilterNode | undefined {
  const leaves: FilterNode[] = Object.entries(filters).map(([field, raw]) => {
    const column = table.columnIndex(field) ?? 0;
    const isArrayColumn = table.columns[column]?.type === "_text";
    return { kind: "leaf", field, column, op: Array.isArray(raw) && !isArrayColumn ? "in" : "eq", raw };
  });
  if (leaves.length === 0) return undefined;
  return { kind: "$and", children: leaves };
}

/** CKAN 2.12's parse_query_filters; throws its validation errors. */
export function parseFilterOps(input: unknown, table: Table): FilterNode | undefined {
  const errors: string[] = [];
  const isDict = (value: unknown): value is Record<string, unknown> =>
    typeof value === "object" && value !== null && !Array.isArray(value);
  const isListOfDicts = (value: unknown): value is Record<string, unknown>[] =>
    Array.isArray(value) && value.every(isDict);

  const fieldOp = (field: string, op: string, raw: unknown): FilterNode | undefined => {
    const column = table.columnIndex(field);
    if (column === undefined) {
      errors.push(`Unknown field: ${field}`);
      return undefined;
    }
    return { kind: "leaf", field, column, op, raw };
  };

  const processField = (name: string, value: unknown): FilterNode | undefined => {
    const field = name.startsWith("$$") ? name.slice(1) : name;
    if (isDict(value)) {
      const keys = Object.keys(value);
      if (keys.length === 1) return fieldOp(field, keys[0] ?? "", value[keys[0] ?? ""]);
      const children = keys.flatMap((key) => processField(field, { [key]: value[key] }) ?? []);
      return children.length > 0 ? { kind: "$and", children } : undefined;
    }
    if (Array.isArray(value)) {
      const dicts = value.filter(isDict);
      const others = value.filter((item) => !isDict(item));
      if (dicts.length === 0) return fieldOp(field, "in", value);
      const members = dicts.flatMap((dict) => processField(field, dict) ?? []);
      const rest = others.length > 0 ? fieldOp(field, "in", others) : undefined;
      if (rest) members.push(rest);
      return members.length > 0 ? { kind: "$or", children: members } : undefined;
    }
    return fieldOp(field, "eq", value);
  };

  const checkOperator = (key: string, value: unknown): boolean => {
    if (key !== "$or" && key !== "$and") {
      errors.push(`Unknown operators (must be one of $or, $and): ${key}`);
      return false;
    }
    if (!isListOfDicts(value)) {
      errors.push(`Filter operations must be defined as a list of dicts: ${JSON.stringify(value)}`);
      return false;
    }
    return true;
  };

  /** Members of an operator: each dict ANDs its keys; nested operators of the same kind merge. */
  const members = (list: Record<string, unknown>[], parent: "$and" | "$or"): FilterNode[] => {
    const out: FilterNode[] = [];
    for (const item of list) {
      const children: FilterNode[] = [];
      for (const [key, value] of Object.entries(item)) {
        if (key.startsWith("$") && !key.startsWith("$$")) {
          if (!checkOperator(key, value)) continue;
          const nested = members(value as Record<string, unknown>[], key as "$and" | "$or");
          if (nested.length > 0) children.push({ kind: key as "$and" | "$or", children: nested });
        } else {
          const node = processField(key, value);
          if (node) children.push(node);
        }
      }
      if (children.length === 1) out.push(children[0] as FilterNode);
      else if (children.length > 1) out.push({ kind: "$and", children: merge(children, "$and") });
    }
    return merge(out, parent);
  };

  let root: FilterNode | undefined;
  if (
    input === undefined ||
    input === null ||
    (isDict(input) && Object.keys(input).length === 0) ||
    (Array.isArray(input) && input.length === 0)
  ) {
    return undefined;
  }
  if (Array.isArray(input)) {
    if (!isListOfDicts(input))
      throw validationError({ filters: ["Filters must be defined as a dict or a list of dicts"] });
    const children = members(input, "$or");
    if (children.length > 0) root = { kind: "$or", children };
  } else if (isDict(input)) {
    const children: FilterNode[] = [];
    for (const [key, value] of Object.entries(input)) {
      if (key.startsWith("$") && !key.startsWith("$$")) {
        if (!checkOperator(key, value)) continue;
        const nested = members(value as Record<string, unknown>[], key as "$and" | "$or");
        if (nested.length === 0) continue;
        if (key === "$and") children.push(...nested);
        else children.push({ kind: "$or", children: nested });
      } else {
        const node = processField(key, value);
        if (node) children.push(node);
      }
    }
    if (errors.length === 0) root = children.length > 1 ? { kind: "$and", children } : children[0];
  } else {
    throw validationError({ filters: ["Filters must be defined as a dict or a list of dicts"] });
  }
  if (errors.length > 0) throw validationError({ filters: errors });
  return root;
}

function merge(nodes: FilterNode[], parent: "$and" | "$or"): FilterNode[] {
  return nodes.flatMap((node) => (node.kind === parent ? node.children : [node]));
}

/** CKAN 2.12 raises this while building SQL for an operation it does not know. */
export function checkOperations(node: FilterNode | undefined): void {
  if (node === undefined) return;
  if (node.kind !== "leaf") {
    node.children.forEach(checkOperations);
    return;
  }
  if (!OPS.has(node.op)) throw validationError({ filters: [`Unknown filter operation: '${node.op}'`] });
}

/** The `filterops` echo: FilterOp named tuples, written as objects by simplejson. */
export function filterOpsJson(node: FilterNode): Record<string, unknown> {
  if (node.kind === "leaf") return { op: node.op, field: node.field, value: node.raw };
  return { op: node.kind, field: null, value: node.children.map(filterOpsJson) };
}

// --- evaluation --------------------------------------------------------------------------------

/** PostgreSQL ordering of two non-null values of one column type. */
export function compareValues(type: ColumnType | "float", a: Value, b: Value): number {
  if (type === "numeric") return compareDecimalText(String(a), String(b));
  if (typeof a === "number" && typeof b === "number") return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b);
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const x = a[i] ?? null;
      const y = b[i] ?? null;
      if (x === y) continue;
      // Array comparison treats a NULL element as larger than any value.
      if (x === null) return 1;
      if (y === null) return -1;
      return x < y ? -1 : 1;
    }
    return a.length - b.length;
  }
  const left = String(a);
  const right = String(b);
  return left < right ? -1 : left > right ? 1 : 0;
}

function leafMatches(leaf: BoundLeaf, cell: Value): boolean {
  if (cell === null) return false;
  for (const value of leaf.values) {
    if (value === null) continue;
    const order = compareValues(leaf.type, cell, value);
    switch (leaf.op) {
      case "eq":
      case "in":
        if (order === 0) return true;
        break;
      case "gt":
        if (order > 0) return true;
        break;
      case "gte":
        if (order >= 0) return true;
        break;
      case "lt":
        if (order < 0) return true;
        break;
      case "lte":
        if (order <= 0) return true;
        break;
    }
  }
  return false;
}

export function conditionMatches(condition: Condition, cell: (column: number) => Value): boolean {
  switch (condition.kind) {
    case "leaf":
      return leafMatches(condition, cell(condition.column));
    case "$and":
      return condition.children.every((child) => conditionMatches(child, cell));
    case "$or":
      return condition.children.some((child) => conditionMatches(child, cell));
  }
}

export function isOp(op: string): op is Op {
  return OPS.has(op);
}
