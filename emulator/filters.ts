import { invalidQuery, validationError } from "./error-answers.ts";
import { literal } from "./literal.ts";
import { COLUMNS, columnIndex, type Value } from "./schema.ts";

// `filters` as a list of conditions over cells. A scalar is `=`, a list is `IN`, and (2.12 only)
// an object of {gt, gte, lt, lte} is a range, the form `next_page` hands back for keyset paging.

export type Op = "eq" | "in" | "gt" | "gte" | "lt" | "lte";
const RANGE_OPS: readonly Op[] = ["eq", "gt", "gte", "lt", "lte"];
const SQL_OPS: Record<Op, string> = { eq: "=", in: "in", gt: ">", gte: ">=", lt: "<", lte: "<=" };

export interface Condition {
  readonly column: number;
  readonly op: Op;
  /** One value, or the members of an `in` list. A null value never matches, as in SQL. */
  readonly values: readonly Value[];
}

/** The first filter key that is not a column: CKAN answers `invalid value "<key>"` for it. */
export function unknownFilterKey(filters: Record<string, unknown>): string | undefined {
  return Object.keys(filters).find((key) => columnIndex(key) === undefined);
}

/** Converts validated `filters` (every key a column) into conditions, as PostgreSQL would bind them. */
export function compileFilters(filters: Record<string, unknown>, rangeOps: boolean, table: string): Condition[] {
  const parts: { column: number; op: Op; raw: unknown[] }[] = [];
  for (const [key, value] of Object.entries(filters)) {
    const column = columnIndex(key) ?? 0;
    if (Array.isArray(value)) {
      parts.push({ column, op: "in", raw: value });
    } else if (rangeOps && typeof value === "object" && value !== null) {
      for (const [op, operand] of Object.entries(value)) {
        if (!RANGE_OPS.includes(op as Op)) throw validationError({ filters: [`Unknown filter operation: '${op}'`] });
        parts.push({ column, op: op as Op, raw: [operand] });
      }
    } else {
      parts.push({ column, op: "eq", raw: [value] });
    }
  }
  const statement = whereStatement(table, parts);
  return parts.map(({ column, op, raw }) => {
    const type = COLUMNS[column]?.type ?? "text";
    const values = raw.map((item) => {
      const converted = literal(type, item);
      if (!converted.ok) throw invalidQuery(statement, converted.orig);
      return converted.value;
    });
    return { column, op, values };
  });
}

function whereStatement(table: string, parts: { column: number; op: Op; raw: unknown[] }[]): string {
  let placeholder = 0;
  const clauses = parts.map(({ column, op, raw }) => {
    const name = `"${COLUMNS[column]?.id ?? ""}"`;
    const values = raw.map(() => `%(value_${placeholder++})s`);
    return op === "in" ? `${name} in (${values.join(",")})` : `${name} ${SQL_OPS[op]} ${values[0] ?? ""}`;
  });
  return `SELECT * FROM "${table}" WHERE (${clauses.join(" AND ")})`;
}

/** PostgreSQL ordering of two non-null values of one column. */
export function compareValues(a: Value, b: Value): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b);
  const left = String(a);
  const right = String(b);
  return left < right ? -1 : left > right ? 1 : 0;
}

export function matches(condition: Condition, cell: Value): boolean {
  if (cell === null) return false;
  for (const value of condition.values) {
    if (value === null) continue;
    const order = compareValues(cell, value);
    switch (condition.op) {
      case "eq":
      case "in":
        if (order === 0) return true;
        break;
      case "gt": if (order > 0) return true; break;
      case "gte": if (order >= 0) return true; break;
      case "lt": if (order < 0) return true; break;
      case "lte": if (order <= 0) return true; break;
    }
  }
  return false;
}
