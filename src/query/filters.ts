import { BadParameter, clip } from "../errors.ts";
import { significantDigits } from "../rows/values.ts";
import { BOUNDS } from "./bounds.ts";
import { single } from "./parameter.ts";
import {
  RANGE_OPERATORS,
  type FilterScalar,
  type Filters,
  type RangeFilter,
  type RangeOperator,
} from "./table-query.ts";

// The parameters that name columns: `filters` and `filter.<field>` (read together), `fields`, and
// the column names in `sort`.

/** Column names as PostgreSQL allows them, minus what only a hostile link would send. */
export function checkFieldName(parameter: string, name: string): void {
  if (/[\u0000-\u001f\u007f"]/.test(name)) {
    throw new BadParameter(parameter, `Column name "${clip(name)}" has a control character or a double quote.`);
  }
  if (new TextEncoder().encode(name).byteLength > BOUNDS.fieldName) {
    throw new BadParameter(
      parameter,
      `Column name "${clip(name)}" is longer than ${BOUNDS.fieldName} bytes, the most a column name can be.`,
    );
  }
}

function isScalar(value: unknown): value is FilterScalar {
  return (
    typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))
  );
}

function rangeFilter(field: string, value: object, parameter: string): RangeFilter {
  const entries = Object.entries(value);
  const bad = entries.find(([op, bound]) => !RANGE_OPERATORS.includes(op as RangeOperator) || !isScalar(bound));
  if (entries.length === 0 || bad !== undefined) {
    throw new BadParameter(
      parameter,
      `The range filter on "${field}" must map gt, gte, lt or lte to a value, e.g. {"${field}":{"gte":10,"lt":20}}${bad ? ` (got "${clip(bad[0])}")` : ""}.`,
    );
  }
  return Object.fromEntries(entries) as RangeFilter;
}

function filterValue(field: string, value: unknown, parameter: string): Filters[string] {
  if (isScalar(value)) return value;
  if (Array.isArray(value) && value.length > 0 && value.every(isScalar)) return value;
  if (value !== null && typeof value === "object" && !Array.isArray(value)) return rangeFilter(field, value, parameter);
  const why = Array.isArray(value)
    ? value.length === 0
      ? "is an empty list"
      : "is a list holding something other than text, numbers or booleans"
    : value === null
      ? "is null"
      : "is not text, a number, a boolean or a list of them";
  throw new BadParameter(parameter, `The filter on "${field}" ${why}.`);
}

/** `filter.<field>` (exact values) or `filter.<field>[gte]` (a bound of a range): the field and operator. */
const FILTER_NAME = /^filter\.(.*?)(?:\[(gt|gte|lt|lte)\])?$/s;
/** `filter.<field>[<anything>]`: a bound in brackets, told apart from a column whose name has brackets. */
const FILTER_BOUND = /^filter\.(.+)\[([^\]]*)\]$/s;
/** `filter.<field>[gt` (the `]` forgotten, so the URL's `=` ended the name early): the bound, unclosed. */
const UNCLOSED_BOUND = /^filter\.(.+)\[(gt|gte|lt|lte)$/s;

/**
 * A filter number with more digits than a double holds is passed on as its text (CKAN casts it to
 * the column's type): rounded, `12345678901234567890.5` would match another value, or none.
 */
function exactNumbers(_key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value !== "number" || context?.source === undefined) return value;
  return significantDigits(context.source) > 15 ? context.source : value;
}

/** `filters`: CKAN's own JSON form. */
function jsonFilters(raw: string | undefined, filters: Filters): Set<string> {
  const fromJson = new Set<string>();
  if (raw === undefined || raw.trim() === "") return fromJson;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw, exactNumbers);
  } catch {
    throw new BadParameter(
      "filters",
      'Parameter filters must be a JSON object, e.g. filters={"category":["alpha","beta"]}.',
    );
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new BadParameter(
      "filters",
      'Parameter filters must be a JSON object of field -> value, e.g. filters={"year":2020}.',
    );
  }
  for (const [field, value] of Object.entries(parsed)) {
    if (field === "") throw new BadParameter("filters", "A filter has an empty field name.");
    checkFieldName("filters", field);
    filters[field] = filterValue(field, value, "filters");
    fromJson.add(field);
  }
  return fromJson;
}

/** The field and bound operator of a `filter.` name, or a 400 on a bound that is not one. */
function filterName(name: string): { field: string; op: RangeOperator | undefined } {
  const [, field = "", op] = FILTER_NAME.exec(name) ?? [];
  if (field === "") throw new BadParameter(name, "A filter.<field> parameter needs a field name after the dot.");
  const unclosed = op === undefined ? UNCLOSED_BOUND.exec(name) : null;
  if (unclosed !== null) {
    throw new BadParameter(
      name,
      `Parameter ${clip(name)} has no closing bracket: a range filter's bound is written filter.${clip(unclosed[1] ?? "", 40)}[${unclosed[2]}]=<value>.`,
      { documented: "filter.x[gte]" },
    );
  }
  const bound = op === undefined ? FILTER_BOUND.exec(name) : null;
  if (bound !== null) {
    throw new BadParameter(
      name,
      `Parameter ${clip(name)} has the bound [${clip(bound[2] ?? "", 20)}]; a range filter's bound is one of ${RANGE_OPERATORS.map((o) => `[${o}]`).join(", ")}, e.g. filter.${clip(bound[1] ?? "", 40)}[gte]=10.`,
    );
  }
  checkFieldName(name, field);
  return { field, op: op as RangeOperator | undefined };
}

/** `filter.<field>` and `filter.<field>[op]`, the URL-friendly form, added to `filters`. */
function urlFilters(params: URLSearchParams, filters: Filters, fromJson: Set<string>): void {
  for (const name of new Set(params.keys())) {
    if (!name.startsWith("filter.")) continue;
    const { field, op } = filterName(name);
    if (fromJson.has(field))
      throw new BadParameter(name, `Field "${field}" is filtered both in filters and in ${name}; use one of them.`);
    const values = params.getAll(name);
    const current = filters[field];
    if (op === undefined) {
      if (current !== undefined)
        throw new BadParameter(name, `Field "${field}" has both an exact filter and a range; use one of them.`);
      filters[field] = values.length === 1 ? (values[0] as string) : values;
      continue;
    }
    const value = single(params, name) as string;
    if (current !== undefined && (typeof current !== "object" || Array.isArray(current))) {
      throw new BadParameter(name, `Field "${field}" has both an exact filter and a range; use one of them.`);
    }
    filters[field] = { ...(current ?? {}), [op]: value };
  }
}

/** Every filter of the link: `filters` (raw) and the `filter.<field>` names, within BOUNDS. */
export function parseFilters(raw: string | undefined, params: URLSearchParams): Filters {
  // No prototype: a column may be called "constructor" or "__proto__".
  const filters: Filters = Object.create(null) as Filters;
  urlFilters(params, filters, jsonFilters(raw, filters));
  const fieldCount = Object.keys(filters).length;
  if (fieldCount > BOUNDS.filterFields) {
    throw new BadParameter(
      "filters",
      `${fieldCount} columns are filtered; the most this worker accepts is ${BOUNDS.filterFields}.`,
    );
  }
  const valueCount = Object.values(filters).reduce<number>(
    (n, v) => n + (Array.isArray(v) ? v.length : typeof v === "object" ? Object.keys(v).length : 1),
    0,
  );
  if (valueCount > BOUNDS.filterValues) {
    throw new BadParameter(
      "filters",
      `The filters hold ${valueCount} values; the most this worker accepts is ${BOUNDS.filterValues}.`,
    );
  }
  return filters;
}

/** `fields`: comma-separated column names, each once, at most BOUNDS.fields of them. */
export function parseFields(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const fields = value.split(",").map((f) => f.trim());
  if (fields.length > BOUNDS.fields) {
    throw new BadParameter(
      "fields",
      `Parameter fields names ${fields.length} columns; the most this worker accepts is ${BOUNDS.fields}.`,
    );
  }
  if (fields.some((f) => f === ""))
    throw new BadParameter("fields", "Parameter fields has an empty name; separate column names with single commas.");
  for (const f of fields) checkFieldName("fields", f);
  const seen = new Set<string>();
  for (const f of fields) {
    if (seen.has(f)) throw new BadParameter("fields", `Parameter fields names "${f}" twice.`);
    seen.add(f);
  }
  return fields;
}
