import { getList, pythonStr, toBoolean, toInteger } from "./coerce.ts";
import { validationError } from "./error-answers.ts";
import type { RawParams } from "./request.ts";

// The first of CKAN's two validation passes: datastore_search_schema(). It checks each parameter
// on its own, collects every error into one 409, and fills in defaults. Checks against the table
// (column names) come later, in plan.ts, after the resource has been found and access granted.

export type RecordsFormat = "objects" | "lists" | "csv" | "tsv";
const RECORDS_FORMATS: readonly RecordsFormat[] = ["objects", "lists", "csv", "tsv"];

export interface Params {
  resourceId: string;
  q?: string | Record<string, unknown>;
  fullText?: string;
  /** An object (2.10); 2.12 also lets a list of objects or any JSON through to its own parser. */
  filters?: unknown;
  limit: number;
  /** 2.12 offers `next_page` only when the caller chose a limit. */
  limitGiven: boolean;
  offset: number;
  fields?: string[];
  sort?: string[];
  distinct: boolean;
  includeTotal: boolean;
  totalEstimationThreshold: number | null;
  recordsFormat: RecordsFormat;
  includeNextPage: boolean;
  /** Parameters the schema does not know; CKAN rejects them only after the access check. */
  extras: string[];
  /** The validated inputs under CKAN's names, echoed back in `result`. */
  echo: Record<string, unknown>;
}

export interface SchemaOptions {
  rowsMax: number;
  /** 2.12 knows `include_next_page`; 2.10 treats it as an unknown parameter. */
  nextPage: boolean;
}

const KNOWN = new Set([
  "resource_id",
  "id",
  "q",
  "filters",
  "limit",
  "offset",
  "fields",
  "sort",
  "records_format",
  "include_total",
  "total_estimation_threshold",
  "plain",
  "language",
  "distinct",
  "full_text",
]);

export function validateSchema(raw: RawParams, options: SchemaOptions): Params {
  const errors: Record<string, string[]> = {};
  const echo: Record<string, unknown> = {};
  // ignore_missing: a null value is the same as an absent one.
  const given = (key: string): boolean => raw[key] !== undefined && raw[key] !== null;

  const resourceId = raw["resource_id"] ?? raw["id"];
  if (resourceId === undefined || resourceId === null || resourceId === "") {
    errors["resource_id"] = ["Missing value"];
  } else {
    echo["resource_id"] = pythonStr(resourceId);
  }

  const limit = given("limit") && raw["limit"] !== "" ? naturalNumber(raw["limit"], "limit", errors) : 100;
  echo["limit"] = Math.min(limit ?? 0, options.rowsMax);
  const offset = given("offset") ? naturalNumber(raw["offset"], "offset", errors) : undefined;
  if (offset !== undefined) echo["offset"] = offset;

  let threshold: number | null = null;
  if (given("total_estimation_threshold")) {
    const value = toInteger(raw["total_estimation_threshold"]);
    if (value === undefined) errors["total_estimation_threshold"] = ["Invalid integer"];
    else threshold = value;
  }
  // CKAN 2.12 still takes total_estimation_threshold but no longer echoes it (nor estimates).
  if (!options.nextPage) echo["total_estimation_threshold"] = threshold;

  const format = given("records_format") ? raw["records_format"] : "objects";
  if (!RECORDS_FORMATS.includes(format as RecordsFormat)) {
    errors["records_format"] = ["Value must be one of ['objects', 'lists', 'csv', 'tsv']"];
  }
  echo["records_format"] = format;

  const includeTotal = given("include_total") ? toBoolean(raw["include_total"]) : true;
  echo["include_total"] = includeTotal;

  for (const key of ["plain", "distinct"]) {
    if (given(key)) echo[key] = toBoolean(raw[key]);
  }
  // 2.12 has include_next_page default to false, and echoes it always.
  if (options.nextPage)
    echo["include_next_page"] = given("include_next_page") ? toBoolean(raw["include_next_page"]) : false;
  for (const key of ["language", "full_text"]) {
    if (given(key)) echo[key] = pythonStr(raw[key]);
  }

  if (given("q")) echo["q"] = parseQ(raw["q"]);
  if (given("filters")) {
    const filters = parseJson(raw["filters"]);
    if (filters === undefined) errors["filters"] = ["Cannot parse JSON"];
    else echo["filters"] = filters;
  }
  const fields = given("fields") ? stringList(raw["fields"], "fields", errors) : undefined;
  if (fields !== undefined) echo["fields"] = raw["fields"];
  const sort = given("sort") ? stringList(raw["sort"], "sort", errors) : undefined;
  if (sort !== undefined) echo["sort"] = raw["sort"];

  if (Object.keys(errors).length > 0) throw validationError(errors);

  const filters = echo["filters"];
  // 2.12 also takes a list of dicts (ORed), and checks the shape itself when it parses filters.
  const isObject = typeof filters === "object" && filters !== null && !Array.isArray(filters);
  if (filters !== undefined && !isObject && !options.nextPage) {
    throw validationError({ filters: ["Not a JSON object"] });
  }
  const known = (key: string) => KNOWN.has(key) || (options.nextPage && key === "include_next_page");
  return {
    resourceId: echo["resource_id"] as string,
    q: echo["q"] as Params["q"],
    fullText: echo["full_text"] as string | undefined,
    filters: filters as Params["filters"],
    limit: echo["limit"] as number,
    limitGiven: given("limit"),
    offset: offset ?? 0,
    fields: fields === undefined || fields.length === 0 ? undefined : getList(fields, true),
    sort: sort === undefined || sort.length === 0 ? undefined : getList(sort, false),
    distinct: echo["distinct"] === true,
    includeTotal,
    totalEstimationThreshold: threshold,
    recordsFormat: format as RecordsFormat,
    includeNextPage: echo["include_next_page"] === true,
    extras: Object.keys(raw).filter((key) => !known(key)),
    echo,
  };
}

function naturalNumber(value: unknown, key: string, errors: Record<string, string[]>): number | undefined {
  const number = toInteger(value);
  if (number === undefined) {
    // limit runs through a second validator that adds its own complaint.
    errors[key] = key === "limit" ? ["Invalid integer", "Please enter an integer value"] : ["Invalid integer"];
  } else if (number < 0) {
    errors[key] = ["Must be a natural number"];
  }
  return number;
}

/** unicode_or_json_validator: a JSON object (given or encoded) stays an object, all else is text. */
function parseQ(value: unknown): string | Record<string, unknown> {
  const parsed = parseJson(value);
  if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
    return parsed as Record<string, unknown>;
  }
  return pythonStr(value);
}

/** json_validator: objects and lists pass, strings are decoded; undefined when undecodable. */
function parseJson(value: unknown): unknown {
  if (typeof value === "object") return value;
  if (typeof value !== "string") return undefined;
  try {
    return JSON.parse(value);
  } catch {
    return undefined;
  }
}

/** list_of_strings_or_string. */
function stringList(value: unknown, key: string, errors: Record<string, string[]>): string | string[] | undefined {
  if (typeof value === "string") return value;
  if (!Array.isArray(value)) {
    errors[key] = ["Not a list"];
    return undefined;
  }
  const bad = value.find((item) => typeof item !== "string");
  if (bad !== undefined) {
    errors[key] = [`Not a string: ${pythonStr(bad)}`];
    return undefined;
  }
  return value as string[];
}
