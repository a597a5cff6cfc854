import { sortColumns } from "./sort.ts";
import { RANGE_OPERATORS, type FilterScalar, type Filters, type RangeFilter, type RangeOperator, type TableQuery } from "./table-query.ts";
import type { Config } from "../config/config.ts";
import { badRequest, HttpError, clip } from "../errors.ts";
import { downloadName } from "./filename.ts";
import { FORMATS, type CsvOptions, type FormatName, type NumericMode } from "./formats.ts";
import { significantDigits } from "../rows/values.ts";
import { UUID_PATTERN } from "../config/settings.ts";
import { rowLimitOf, whoseMaximum, type RowLimit } from "./row-limit.ts";
import { BOUNDS, COMMON_NAMES, DECIMALS, DELIMITERS, ERROR_MODES, LINK_NAMES, NUMERIC_MODES } from "./params.ts";

/** A validated export: which rows CKAN should send, and how to write them. */
export interface ExportQuery extends TableQuery {
  format: FormatName;
  /** The alias from RESOURCES when the link used `resource=`. */
  alias: string | undefined;
  csv: CsvOptions;
  /** Parquet: numeric columns as exact text (default) or doubles. */
  numeric?: NumericMode;
  filename: string;
  /** The most rows this export may hold (worked out here, checked by the paging). */
  rowLimit: RowLimit;
}

/** Every name a link may carry, per format; `filter.<field>` and `_`-prefixed names are handled apart. */
export function allowedParams(format: FormatName): string[] {
  return [...COMMON_NAMES, ...FORMATS[format].params];
}

export function single(params: URLSearchParams, name: string): string | undefined {
  const values = params.getAll(name);
  if (values.length > 1) throw badRequest(name, `Parameter ${name} is given ${values.length} times; give it once.`);
  return values[0];
}

function checkNames(params: URLSearchParams, format: FormatName): void {
  const allowed = new Set(allowedParams(format));
  const unknown: string[] = [];
  for (const name of new Set(params.keys())) {
    if (name.startsWith("_") || name.startsWith("filter.") || allowed.has(name) || LINK_NAMES.includes(name)) continue;
    unknown.push(name);
  }
  if (unknown.length === 0) return;
  const otherFormats = unknown.filter((name) =>
    Object.values(FORMATS).some((f) => (f.params as readonly string[]).includes(name)),
  );
  const first = unknown[0] as string;
  if (otherFormats.length > 0) {
    throw badRequest(
      otherFormats[0] as string,
      `Parameter ${otherFormats.join(", ")} does not apply to ${format} exports (it is for ${Object.keys(FORMATS)
        .filter((f) => (FORMATS[f as FormatName].params as readonly string[]).includes(otherFormats[0] as string))
        .join(" and ")}).`,
    );
  }
  throw badRequest(
    first,
    `Unknown parameter${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}. Known parameters: ${[...allowed].join(", ")}, filter.<field>.`,
  );
}

/** A whole number up to `max`; above it (however many digits), a 400 saying whose maximum it passes. */
export function wholeNumber(name: string, value: string | undefined, max: number, above: (text: string) => string): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (!/^\d+$/.test(text)) throw badRequest(name, `Parameter ${name} must be a whole number, 0 or more (got "${clip(value)}").`);
  const n = Number(text);
  if (n > max) throw badRequest(name, above(clip(text.replace(/^0+(?=\d)/, ""), 40)));
  return n;
}

function flag(name: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (value === "1" || value === "true") return true;
  if (value === "0" || value === "false") return false;
  throw badRequest(name, `Parameter ${name} must be 1 or 0 (got "${clip(value)}").`);
}

function headerOption(value: string | undefined, format: FormatName): CsvOptions["header"] {
  if (value === "label") return "label";
  if (value !== undefined && !["1", "0", "true", "false"].includes(value)) {
    throw badRequest("header", `Parameter header must be 1, 0 or label (got "${clip(value)}").`);
  }
  if (flag("header", value, true)) return "id";
  if (format === "xlsx") throw badRequest("header", "An XLSX sheet always has its header row (frozen above the data): use header=1 or header=label.");
  if (format === "parquet") throw badRequest("header", "A Parquet file always names its columns: use header=1 (ids) or header=label.");
  return "none";
}

/** Column names as PostgreSQL allows them, minus what only a hostile link would send. */
function checkFieldName(parameter: string, name: string): void {
  if (/[\u0000-\u001f\u007f"]/.test(name)) {
    throw badRequest(parameter, `Column name "${clip(name)}" has a control character or a double quote.`);
  }
  if (new TextEncoder().encode(name).byteLength > BOUNDS.fieldName) {
    throw badRequest(parameter, `Column name "${clip(name)}" is longer than ${BOUNDS.fieldName} bytes, the most a column name can be.`);
  }
}

export function checkLength(parameter: string, value: string | undefined, max: number): void {
  if (value !== undefined && value.length > max) {
    throw badRequest(parameter, `Parameter ${parameter} is ${value.length} characters long; the most this worker accepts is ${max}.`);
  }
}

function isScalar(value: unknown): value is FilterScalar {
  return typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value));
}

function rangeFilter(field: string, value: object, parameter: string): RangeFilter {
  const entries = Object.entries(value);
  const bad = entries.find(([op, bound]) => !RANGE_OPERATORS.includes(op as RangeOperator) || !isScalar(bound));
  if (entries.length === 0 || bad !== undefined) {
    throw badRequest(
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
  throw badRequest(parameter, `The filter on "${field}" ${why}.`);
}

/** `filter.<field>` (exact values) or `filter.<field>[gte]` (a bound of a range): the field and operator. */
const FILTER_NAME = /^filter\.(.*?)(?:\[(gt|gte|lt|lte)\])?$/s;
/** `filter.<field>[<anything>]`: a bound in brackets, told apart from a column whose name has brackets. */
const FILTER_BOUND = /^filter\.(.+)\[([^\]]*)\]$/s;

/**
 * A filter number with more digits than a double holds is passed on as its text (CKAN casts it to
 * the column's type): rounded, `12345678901234567890.5` would match another value, or none.
 */
function exactNumbers(_key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value !== "number" || context?.source === undefined) return value;
  return significantDigits(context.source) > 15 ? context.source : value;
}

function parseFilters(params: URLSearchParams): Filters {
  // No prototype: a column may be called "constructor" or "__proto__".
  const filters: Filters = Object.create(null) as Filters;
  const raw = single(params, "filters");
  const fromJson = new Set<string>();
  if (raw !== undefined && raw.trim() !== "") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw, exactNumbers);
    } catch {
      throw badRequest("filters", 'Parameter filters must be a JSON object, e.g. filters={"category":["alpha","beta"]}.');
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      throw badRequest("filters", 'Parameter filters must be a JSON object of field -> value, e.g. filters={"year":2020}.');
    }
    for (const [field, value] of Object.entries(parsed)) {
      if (field === "") throw badRequest("filters", "A filter has an empty field name.");
      checkFieldName("filters", field);
      filters[field] = filterValue(field, value, "filters");
      fromJson.add(field);
    }
  }
  for (const name of new Set(params.keys())) {
    if (!name.startsWith("filter.")) continue;
    const [, field = "", op] = FILTER_NAME.exec(name) ?? [];
    if (field === "") throw badRequest(name, "A filter.<field> parameter needs a field name after the dot.");
    const bound = op === undefined ? FILTER_BOUND.exec(name) : null;
    if (bound !== null) {
      throw badRequest(
        name,
        `Parameter ${clip(name)} has the bound [${clip(bound[2] ?? "", 20)}]; a range filter's bound is one of ${RANGE_OPERATORS.map((o) => `[${o}]`).join(", ")}, e.g. filter.${clip(bound[1] ?? "", 40)}[gte]=10.`,
      );
    }
    checkFieldName(name, field);
    if (fromJson.has(field)) {
      throw badRequest(name, `Field "${field}" is filtered both in filters and in ${name}; use one of them.`);
    }
    const values = params.getAll(name);
    const current = filters[field];
    if (op === undefined) {
      if (current !== undefined) throw badRequest(name, `Field "${field}" has both an exact filter and a range; use one of them.`);
      filters[field] = values.length === 1 ? (values[0] as string) : values;
      continue;
    }
    if (values.length > 1) throw badRequest(name, `Parameter ${name} is given ${values.length} times; give it once.`);
    if (current !== undefined && (typeof current !== "object" || Array.isArray(current))) {
      throw badRequest(name, `Field "${field}" has both an exact filter and a range; use one of them.`);
    }
    filters[field] = { ...(current ?? {}), [op]: values[0] as string };
  }
  const fieldCount = Object.keys(filters).length;
  if (fieldCount > BOUNDS.filterFields) {
    throw badRequest("filters", `${fieldCount} columns are filtered; the most this worker accepts is ${BOUNDS.filterFields}.`);
  }
  const valueCount = Object.values(filters).reduce<number>((n, v) => n + (Array.isArray(v) ? v.length : typeof v === "object" ? Object.keys(v).length : 1), 0);
  if (valueCount > BOUNDS.filterValues) {
    throw badRequest("filters", `The filters hold ${valueCount} values; the most this worker accepts is ${BOUNDS.filterValues}.`);
  }
  return filters;
}

function parseFields(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const fields = value.split(",").map((f) => f.trim());
  if (fields.length > BOUNDS.fields) {
    throw badRequest("fields", `Parameter fields names ${fields.length} columns; the most this worker accepts is ${BOUNDS.fields}.`);
  }
  if (fields.some((f) => f === "")) throw badRequest("fields", "Parameter fields has an empty name; separate column names with single commas.");
  for (const f of fields) checkFieldName("fields", f);
  const seen = new Set<string>();
  for (const f of fields) {
    if (seen.has(f)) throw badRequest("fields", `Parameter fields names "${f}" twice.`);
    seen.add(f);
  }
  return fields;
}

/**
 * The names a caller may use instead, when that reveals nothing: with signing on, what is published
 * is for operators only (discovery needs the admin token too).
 */
function publishedNames(config: Config): string {
  if (config.linkSigningKey !== undefined || config.resources.size === 0) return "";
  const names = [...config.resources.keys()];
  const shown = names.slice(0, 20).join(", ");
  return ` Published: ${shown}${names.length > 20 ? ` and ${names.length - 20} more` : ""} (GET /resources lists them).`;
}

/** The one answer to a name RESOURCES does not hold, for links and discovery alike. */
export const unknownAlias = (config: Config, alias: string): HttpError =>
  new HttpError(404, `No resource is published under the name "${clip(alias)}".${publishedNames(config)}`, { parameter: "resource" });

function resource(params: URLSearchParams, config: Config): { resourceId: string; alias: string | undefined } {
  const id = single(params, "resource_id");
  const alias = single(params, "resource");
  if (id !== undefined && alias !== undefined) {
    throw badRequest("resource", "Give either resource or resource_id, not both.");
  }
  if (alias !== undefined) {
    const mapped = config.resources.get(alias);
    if (mapped === undefined) throw unknownAlias(config, alias);
    return { resourceId: mapped, alias };
  }
  if (id === undefined) {
    throw badRequest("resource_id", "Say which table to export: resource=<name> or resource_id=<UUID>.");
  }
  if (!UUID_PATTERN.test(id)) {
    throw badRequest("resource_id", `Parameter resource_id must be a resource UUID like 5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2 (got "${clip(id)}").`);
  }
  const resourceId = id.toLowerCase();
  // Same answer whether or not the resource exists upstream: the refusal must not reveal that.
  if (!config.allowUnlisted && ![...config.resources.values()].includes(resourceId)) {
    throw new HttpError(403, `Resource ${resourceId} is not published by this worker. Use one of the names it publishes (resource=<name>).`, {
      parameter: "resource_id",
    });
  }
  return { resourceId, alias: undefined };
}

export function parseExportQuery(params: URLSearchParams, format: FormatName, config: Config): ExportQuery {
  checkNames(params, format);
  const { resourceId, alias } = resource(params, config);
  const q = single(params, "q");
  checkLength("q", q, BOUNDS.q);
  const rowLimit = rowLimitOf(format, config.maxRows);
  const limit = wholeNumber("limit", single(params, "limit"), rowLimit.rows, (text) => `limit=${text} is above ${whoseMaximum(rowLimit)}. Use a smaller limit, add filters, or export in parts with offset.`);
  const given = single(params, "sort");
  checkLength("sort", given, BOUNDS.sort);
  // An empty sort means the default order, as an empty q means no search.
  const sort = given === undefined || given.trim() === "" ? undefined : given;
  if (sort !== undefined) for (const column of sortColumns(sort)) checkFieldName("sort", column);
  const delimiter = single(params, "delimiter") ?? (format === "tsv" ? "\t" : ",");
  if (format === "csv" && !(DELIMITERS as readonly string[]).includes(delimiter)) {
    throw badRequest("delimiter", `Parameter delimiter must be one of ${DELIMITERS.join(" ")} (got "${clip(delimiter)}").`);
  }
  const errors = single(params, "errors");
  if (errors !== undefined && !(ERROR_MODES as readonly string[]).includes(errors)) {
    throw badRequest("errors", `Parameter errors must be inline or status (got "${clip(errors)}").`);
  }
  const decimal = single(params, "decimal") ?? ".";
  if (!(DECIMALS as readonly string[]).includes(decimal)) {
    throw badRequest("decimal", `Parameter decimal must be . or , (got "${clip(decimal)}").`);
  }
  if (decimal === "," && delimiter === ",") {
    throw badRequest("decimal", "decimal=, needs another delimiter: with commas between cells, a decimal comma would split every number in two. Add delimiter=%3B (a semicolon), as semicolon locales expect.");
  }
  const numeric = single(params, "numeric");
  if (numeric !== undefined && !(NUMERIC_MODES as readonly string[]).includes(numeric)) {
    throw badRequest("numeric", `Parameter numeric must be text or double (got "${clip(numeric)}").`);
  }
  return {
    format,
    resourceId,
    alias,
    q: q === undefined || q.trim() === "" ? undefined : q,
    filters: parseFilters(params),
    limit,
    offset: wholeNumber("offset", single(params, "offset"), Number.MAX_SAFE_INTEGER, (text) => `offset=${text} is above the largest offset this worker handles, ${Number.MAX_SAFE_INTEGER}.`) ?? 0,
    fields: parseFields(single(params, "fields")),
    sort,
    csv: {
      bom: flag("bom", single(params, "bom"), false),
      header: headerOption(single(params, "header"), format),
      delimiter,
      formulaGuard: flag("formula_guard", single(params, "formula_guard"), true),
      decimal: decimal as CsvOptions["decimal"],
    },
    ...(numeric === undefined ? {} : { numeric: numeric as NumericMode }),
    filename: downloadName(single(params, "filename"), alias ?? resourceId, FORMATS[format].extension),
    rowLimit,
  };
}
