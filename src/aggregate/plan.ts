import { badRequest, clip } from "../errors.ts";
import type { Column } from "../rows/types.ts";
import { accumulatorFactory, resultType, type Accumulator } from "./measures.ts";
import type { AggregateSpec, Bucket, GroupItem, Measure } from "./spec.ts";
import { groupKeyer, type GroupKeyer } from "./keys.ts";
import { isNumberKind, isOrderedKind, kindOf, notA, unquoted, type Kind } from "./values.ts";

// An aggregate checked against the table's own columns: each name must be a column, each bucket a
// date or timestamp, each sum and average numeric, min and max orderable, json never touched. The
// result's columns get PostgreSQL's result types, so the encoders type them as they type exports.

export interface PlannedGroup {
  item: GroupItem;
  /** Where the column is in the rows read. */
  index: number;
  /** What tells its values apart, as groups (see keys.ts). */
  keyer: GroupKeyer;
  /** The group's output cell from a row's cell (a bucket's first instant). */
  value: (cell: string) => string;
}

export interface PlannedMeasure {
  measure: Measure;
  /** Where its column is in the rows read (none for `count` of rows). */
  index: number | undefined;
  make: () => Accumulator;
}

export interface AggregatePlan {
  /** The columns to read from CKAN, in the order rows carry them. */
  read: Column[];
  groups: PlannedGroup[];
  measures: PlannedMeasure[];
  /** The output's columns: group columns, then measures, named as the link wrote them. */
  columns: Column[];
  kinds: Kind[];
}

const DATE_LIKE = /^(-?\d{4,})-(\d\d)-(\d\d)(?:[T ](\d\d))?/;

/** The first instant of the bucket a date or timestamp falls in, written as its column's type. */
function bucketValue(bucket: Bucket, kind: Kind, column: string): (cell: string) => string {
  return (cell) => {
    const text = unquoted(cell);
    // date_trunc of an infinite date or timestamp is itself (CKAN's to_char makes a timestamp's null).
    if (text === "infinity" || text === "-infinity") return `"${text}"`;
    const match = DATE_LIKE.exec(text);
    if (match === null) throw notA(cell, column, kind === "date" ? "a date" : "a timestamp");
    const [, year, month, day, hour = "00"] = match;
    const date =
      bucket === "year" ? `${year}-01-01` : bucket === "month" ? `${year}-${month}-01` : `${year}-${month}-${day}`;
    if (kind === "date") return `"${date}"`;
    return `"${date}T${bucket === "hour" ? hour : "00"}:00:00"`;
  };
}

function columnOf(parameter: string, name: string, fields: Column[]): Column {
  const column = fields.find((f) => f.id === name);
  if (column === undefined) {
    const known = fields.map((f) => f.id);
    throw badRequest(
      parameter,
      `Parameter ${parameter} names "${clip(name)}", which is not a column of this table. Its columns: ${clip(known.join(", "), 400)}.`,
    );
  }
  return column;
}

const labelled = (column: Column, id: string, type: string, what: string): Column =>
  column.label === undefined ? { id, type } : { id, type, label: `${column.label} (${what})` };

/** The plan as it is built: the columns read (each once), and the output's columns and kinds. */
class PlanBuilder {
  readonly read: Column[] = [];
  readonly columns: Column[] = [];
  readonly kinds: Kind[] = [];
  readonly fields: Column[];
  constructor(fields: Column[]) {
    this.fields = fields;
  }

  /** Where `column` is in the rows read, added to them when first needed. */
  indexOf(column: Column): number {
    const at = this.read.findIndex((c) => c.id === column.id);
    if (at >= 0) return at;
    this.read.push({ id: column.id, type: column.type });
    return this.read.length - 1;
  }

  output(column: Column, kind: Kind): void {
    this.columns.push(column);
    this.kinds.push(kind);
  }
}

/** A group_by item: a column (not json), or a bucket of a date or timestamp column. */
function planGroup(item: GroupItem, plan: PlanBuilder): PlannedGroup {
  const column = columnOf("group_by", item.column, plan.fields);
  const kind = kindOf(column.type);
  if (kind === "json")
    throw badRequest(
      "group_by",
      `Column "${clip(column.id)}" is json, which PostgreSQL cannot group by (json values have no equality).`,
    );
  if (item.bucket === undefined) {
    plan.output(
      column.label === undefined
        ? { id: item.name, type: column.type }
        : { id: item.name, type: column.type, label: column.label },
      kind,
    );
    const value = (cell: string) => cell;
    return { item, index: plan.indexOf(column), keyer: groupKeyer(kind, undefined, value), value };
  }
  if (kind !== "date" && kind !== "timestamp") {
    throw badRequest(
      "group_by",
      `${item.bucket}(${clip(column.id)}) needs a date or timestamp column; "${clip(column.id)}" is ${column.type}.`,
    );
  }
  if (kind === "date" && item.bucket === "hour") {
    throw badRequest(
      "group_by",
      `hour(${clip(column.id)}): "${clip(column.id)}" is a date, which has no hours; use day(${clip(column.id)}).`,
    );
  }
  plan.output(labelled(column, item.name, kind, item.bucket), kind);
  const value = bucketValue(item.bucket, kind, column.id);
  return { item, index: plan.indexOf(column), keyer: groupKeyer(kind, item.bucket, value), value };
}

/** Whether `fn` takes a column of this kind: sum and avg numbers, min and max what orders; json nothing. */
function checkMeasure(measure: Measure, column: Column, kind: Kind): void {
  if (kind === "json")
    throw badRequest("measures", `Column "${clip(column.id)}" is json, which an aggregate does not read.`);
  if ((measure.fn === "sum" || measure.fn === "avg") && !isNumberKind(kind)) {
    throw badRequest(
      "measures",
      `${measure.name}: "${clip(column.id)}" is ${column.type}; ${measure.fn} needs a numeric column.`,
    );
  }
  if ((measure.fn === "min" || measure.fn === "max") && !isOrderedKind(kind)) {
    throw badRequest(
      "measures",
      `${measure.name}: "${clip(column.id)}" is ${column.type}; min and max take numbers, text, dates and timestamps.`,
    );
  }
}

/** A measure, its result typed as PostgreSQL types it. */
function planMeasure(measure: Measure, plan: PlanBuilder): PlannedMeasure {
  if (measure.column === undefined) {
    plan.output({ id: measure.name, type: "int8" }, "bigint");
    return { measure, index: undefined, make: accumulatorFactory("count", undefined, undefined) };
  }
  const column = columnOf("measures", measure.column, plan.fields);
  const kind = kindOf(column.type);
  checkMeasure(measure, column, kind);
  const type = resultType(measure.fn, kind, column.type);
  plan.output(labelled(column, measure.name, type, measure.fn), kindOf(type));
  return { measure, index: plan.indexOf(column), make: accumulatorFactory(measure.fn, column.id, kind) };
}

/** Checks an aggregate against the table's columns (hidden ones such as `_full_text` excluded) and plans it. */
export function planAggregate(spec: AggregateSpec, fields: Column[]): AggregatePlan {
  const plan = new PlanBuilder(fields);
  const groups = spec.groupBy.map((item) => planGroup(item, plan));
  const measures = spec.measures.map((measure) => planMeasure(measure, plan));
  return { read: plan.read, groups, measures, columns: plan.columns, kinds: plan.kinds };
}
