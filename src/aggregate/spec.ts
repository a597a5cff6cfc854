import { badRequest, clip } from "../errors.ts";

// What an aggregate link asks for, as written: group columns and date buckets, measures, and an
// order over the output's names. Only the syntax is checked here; aggregate/plan.ts checks the
// names and types against the table's columns.

export const BUCKETS = ["year", "month", "day", "hour"] as const;
export type Bucket = (typeof BUCKETS)[number];
export const MEASURE_FUNCTIONS = ["count", "sum", "avg", "min", "max"] as const;
export type MeasureFunction = (typeof MEASURE_FUNCTIONS)[number];

/** The most group columns and measures one link may name (a GROUP BY stays small and cheap). */
export const MAX_GROUP_COLUMNS = 8;
export const MAX_MEASURES = 16;

export interface GroupItem {
  /** The output column's name: `category`, `month(created)`. */
  name: string;
  column: string;
  bucket?: Bucket;
}

export interface Measure {
  /** The output column's name: `count`, `sum(amount)`. */
  name: string;
  fn: MeasureFunction;
  /** Undefined for `count` of rows. */
  column?: string;
}

export interface OutputOrder {
  name: string;
  descending: boolean;
  /** Where null values go; PostgreSQL's own place (last ascending, first descending) when the link does not say. */
  nulls: "first" | "last";
}

export interface AggregateSpec {
  groupBy: GroupItem[];
  measures: Measure[];
  /** Empty: the group columns ascending. */
  sort: OutputOrder[];
}

/** Splits on commas outside double quotes and parentheses; items trimmed. */
function items(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') quoted = !quoted;
    else if (!quoted && c === "(") depth++;
    else if (!quoted && c === ")") depth--;
    else if (!quoted && depth === 0 && c === ",") {
      out.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(text.slice(start).trim());
  return out;
}

/** A column name: bare, or in double quotes with quotes doubled (for names holding commas or parentheses). */
function columnName(parameter: string, text: string, item: string): string {
  const name = text.trim();
  if (name.startsWith('"')) {
    if (name.length < 2 || !name.endsWith('"') || /[^"]"(?!")/.test(name.slice(1, -1).replaceAll('""', ""))) {
      throw badRequest(parameter, `Parameter ${parameter} has a badly quoted column name in "${clip(item)}".`);
    }
    return name.slice(1, -1).replaceAll('""', '"');
  }
  if (name === "" || /[(),"]/.test(name))
    throw badRequest(parameter, `Parameter ${parameter} has "${clip(item)}", which is not a column name.`);
  return name;
}

const CALL = /^([A-Za-z_]+)\s*\((.*)\)$/s;

function groupItem(item: string): GroupItem {
  const call = CALL.exec(item);
  if (call === null) {
    const column = columnName("group_by", item, item);
    return { name: column, column };
  }
  const fn = (call[1] ?? "").toLowerCase();
  if (!(BUCKETS as readonly string[]).includes(fn)) {
    throw badRequest(
      "group_by",
      `Parameter group_by has the unknown function "${clip(call[1] ?? "")}": group by a column or by ${BUCKETS.map((b) => `${b}(f)`).join(", ")}.`,
    );
  }
  const column = columnName("group_by", call[2] ?? "", item);
  return { name: `${fn}(${column})`, column, bucket: fn as Bucket };
}

function measure(item: string): Measure {
  if (item.toLowerCase() === "count") return { name: "count", fn: "count" };
  const call = CALL.exec(item);
  const fn = (call?.[1] ?? "").toLowerCase();
  if (call === null || !(MEASURE_FUNCTIONS as readonly string[]).includes(fn)) {
    throw badRequest(
      "measures",
      `Parameter measures has "${clip(item)}", which is not a measure: use count, count(f), sum(f), avg(f), min(f) or max(f), f a column.`,
    );
  }
  const column = columnName("measures", call[2] ?? "", item);
  return { name: `${fn}(${column})`, fn: fn as MeasureFunction, column };
}

function list(parameter: string, text: string): string[] {
  const parts = items(text);
  if (parts.some((p) => p === ""))
    throw badRequest(parameter, `Parameter ${parameter} has an empty item; separate items with single commas.`);
  return parts;
}

function unique(parameter: string, names: string[]): void {
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) throw badRequest(parameter, `Parameter ${parameter} names "${clip(name)}" twice.`);
    seen.add(name);
  }
}

const ORDER = /^(.*?)(?:\s+(asc|desc))?(?:\s+nulls\s+(first|last))?$/is;

/** An output name as the link writes it, canonical: `SUM( amount )` is `sum(amount)`. */
function outputName(text: string): string | undefined {
  try {
    const call = CALL.exec(text);
    if (call !== null && (BUCKETS as readonly string[]).includes((call[1] ?? "").toLowerCase()))
      return groupItem(text).name;
    if (call !== null || text.toLowerCase() === "count") return measure(text).name;
    return columnName("sort", text, text);
  } catch {
    return undefined;
  }
}

function outputOrder(text: string | undefined, names: string[]): OutputOrder[] {
  if (text === undefined || text.trim() === "") return [];
  return list("sort", text).map((item) => {
    const [, what = "", direction, nulls] = ORDER.exec(item) ?? [];
    const name = outputName(what.trim());
    if (name === undefined || !names.includes(name)) {
      throw badRequest(
        "sort",
        `Parameter sort names "${clip(what.trim())}", which is not a column of this aggregate. Its columns: ${names.join(", ")}.`,
      );
    }
    const descending = direction?.toLowerCase() === "desc";
    const placed = nulls?.toLowerCase() as "first" | "last" | undefined;
    return { name, descending, nulls: placed ?? (descending ? "first" : "last") };
  });
}

/** The aggregate a link asks for (`group_by`, `measures`, `sort`), its syntax checked. */
export function parseAggregateSpec(
  groupBy: string | undefined,
  measures: string | undefined,
  sort: string | undefined,
): AggregateSpec {
  const groups = groupBy === undefined || groupBy.trim() === "" ? [] : list("group_by", groupBy).map(groupItem);
  if (groups.length > MAX_GROUP_COLUMNS) {
    throw badRequest(
      "group_by",
      `Parameter group_by names ${groups.length} columns; the most an aggregate groups by is ${MAX_GROUP_COLUMNS}.`,
    );
  }
  const asked =
    measures === undefined || measures.trim() === "" ? [measure("count")] : list("measures", measures).map(measure);
  if (asked.length > MAX_MEASURES) {
    throw badRequest(
      "measures",
      `Parameter measures names ${asked.length} measures; the most an aggregate computes is ${MAX_MEASURES}.`,
    );
  }
  unique(
    "group_by",
    groups.map((g) => g.name),
  );
  unique(
    "measures",
    asked.map((m) => m.name),
  );
  const names = [...groups.map((g) => g.name), ...asked.map((m) => m.name)];
  const clash = groups.find((g) => asked.some((m) => m.name === g.name));
  if (clash !== undefined)
    throw badRequest("measures", `The output column "${clip(clash.name)}" is both a group column and a measure.`);
  const order = outputOrder(sort, names);
  unique(
    "sort",
    order.map((o) => o.name),
  );
  return { groupBy: groups, measures: asked, sort: order };
}
