// `datastore_search` as CKAN 2.10, 2.11 or 2.12 answers what the worker sends: resource_id, limit,
// offset, fields, sort on `_id` (asc or desc), records_format lists/objects/csv, include_total, and on
// 2.12 include_next_page (keyset paging) and range filters on `_id` (gt/gte/lt/lte). 2.10 and 2.11
// answer include_next_page with their 409 `__extras`. Anything else the bench does not need is a 409
// saying so.
import type { Version, Work } from "./cost.ts";
import { rowText, trailing, type RecordsFormat, type RowStore } from "./store.ts";
import type { TableShape } from "./tables.ts";

export type { Version } from "./cost.ts";
export const ROWS_MAX = 32000;

export interface Resource {
  id: string;
  shape: TableShape;
  rows: number;
}

export class CkanError extends Error {
  readonly status: number;
  readonly error: Record<string, unknown>;
  constructor(status: number, error: Record<string, unknown>) {
    super(String(error.__type));
    this.status = status;
    this.error = error;
  }
}
export const validation = (fields: Record<string, unknown>): CkanError =>
  new CkanError(409, { __type: "Validation Error", ...fields });
export const notFound = (id: unknown): CkanError =>
  new CkanError(404, { __type: "Not Found Error", message: `Not found: Resource "${String(id)}" was not found.` });

// The 2.10 parameter schema: anything else is an "extra", which is how 2.10 rejects include_next_page.
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
  "distinct",
  "plain",
  "language",
  "full_text",
  "total_estimation_threshold",
]);

function integer(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  const n = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0) throw validation({ [name]: ["Invalid integer"] });
  return n;
}

const flag = (value: unknown, fallback: boolean): boolean =>
  value === undefined ? fallback : value === true || value === "true" || value === "True";
const empty = (v: unknown): boolean =>
  v === undefined || v === "" || (typeof v === "object" && v !== null && Object.keys(v).length === 0);

/**
 * The `_id` range the filters leave, as [lo, hi] (inclusive), and how many `_id`s a list named (an
 * SQL `IN`, charged per `_id`); only `_id` filters are supported, lists only of consecutive `_id`s.
 */
function idRange(filters: unknown, rows: number, version: Version): { lo: number; hi: number; listed: number } {
  let lo = 1;
  let hi = rows;
  let listed = 0;
  if (empty(filters)) return { lo, hi, listed };
  if (typeof filters !== "object" || filters === null || Array.isArray(filters))
    throw validation({ filters: ["Filters must be defined as a dict or a list of dicts"] });
  for (const [field, value] of Object.entries(filters)) {
    if (field !== "_id") throw validation({ filters: [`the bench upstream filters on _id only, not "${field}"`] });
    if (typeof value === "number" || (typeof value === "string" && /^\d+$/.test(value))) {
      lo = Math.max(lo, Number(value));
      hi = Math.min(hi, Number(value));
      continue;
    }
    if (Array.isArray(value)) {
      const ids = value.map(Number);
      if (ids.length === 0 || ids.some((id, i) => !Number.isSafeInteger(id) || id !== ids[0]! + i))
        throw validation({ filters: ["the bench upstream lists consecutive _ids only"] });
      lo = Math.max(lo, ids[0]!);
      hi = Math.min(hi, ids.at(-1)!);
      listed += ids.length;
      continue;
    }
    // CKAN 2.10 and 2.11 have no range filters: they fail building SQL for a dict value.
    if (version !== "2.12" || typeof value !== "object" || value === null || Array.isArray(value))
      throw validation({ query: ["Invalid query"] });
    for (const [op, bound] of Object.entries(value)) {
      const b = Number(bound);
      if (typeof bound !== "number" && typeof bound !== "string") throw validation({ query: ["Invalid query"] });
      if (!Number.isFinite(b)) throw validation({ query: ["Invalid query"] });
      if (op === "gt") lo = Math.max(lo, Math.floor(b) + 1);
      else if (op === "gte") lo = Math.max(lo, Math.ceil(b));
      else if (op === "lt") hi = Math.min(hi, Math.ceil(b) - 1);
      else if (op === "lte") hi = Math.min(hi, Math.floor(b));
      else throw validation({ filters: [`Unknown filter operation: '${op}'`] });
    }
  }
  return { lo, hi, listed };
}

export interface Answer {
  parts: Buffer[];
  work: Work;
  format: RecordsFormat;
}

export function search(
  params: Record<string, unknown>,
  resources: Map<string, Resource>,
  version: Version,
  store: RowStore,
  help: string,
): Answer {
  const extra = Object.keys(params).find((k) => !KNOWN.has(k) && !(version === "2.12" && k === "include_next_page"));
  if (extra !== undefined) throw validation({ __extras: [`invalid value "${extra}"`] });
  const resourceId = params.resource_id ?? params.id;
  if (resourceId === undefined) throw validation({ resource_id: ["Missing value"] });
  const resource = resources.get(String(resourceId));
  if (resource === undefined) throw notFound(resourceId);
  const { shape, rows } = resource;
  const limitGiven = params.limit !== undefined;
  const limit = Math.min(integer("limit", params.limit, 100), ROWS_MAX);
  const offset = integer("offset", params.offset, 0);
  const format = (params.records_format ?? "objects") as RecordsFormat;
  if (format !== "objects" && format !== "lists" && format !== "csv")
    throw validation({ records_format: ["Value must be one of ['objects', 'lists', 'csv']"] });
  const sort = params.sort === undefined ? "_id" : String(params.sort);
  const order = /^\s*"?_id"?(\s+(asc|desc))?\s*$/i.exec(sort);
  if (order === null) throw validation({ sort: ["the bench upstream sorts by _id only"] });
  const descending = order[2]?.toLowerCase() === "desc";
  if (!empty(params.q)) throw validation({ q: ["the bench upstream does not search"] });
  const names =
    params.fields === undefined
      ? undefined
      : Array.isArray(params.fields)
        ? params.fields.map(String)
        : String(params.fields)
            .split(",")
            .map((s) => s.trim());
  const columns =
    names === undefined
      ? shape.fields.map((_, i) => i)
      : names.map((name) => {
          const i = shape.fields.findIndex((f) => f.id === name);
          if (i < 0) throw validation({ fields: [`invalid value "${name}"`] });
          return i;
        });
  const includeTotal = flag(params.include_total, true);
  const includeNextPage = version === "2.12" && flag(params.include_next_page, false);
  const { lo, hi, listed } = idRange(params.filters, rows, version);
  const matching = Math.max(0, hi - lo + 1);
  const n = Math.max(0, Math.min(limit, matching - offset));

  let parts: Buffer[];
  let lastId: number | undefined;
  if (!descending) {
    const first = lo + offset;
    parts = n > 0 ? store.slice(shape, format, columns, first, first + n, rows) : [];
    lastId = n > 0 ? first + n - 1 : undefined;
  } else if (n > 1) {
    // A page asked from the table's end (the worker's from-end.ts): the stored rows, largest `_id` first.
    parts = store.sliceDescending(shape, format, columns, hi - offset - n + 1, hi - offset + 1, rows);
    lastId = hi - offset - n + 1;
  } else {
    // A probe for the largest `_id` (limit 1): serialised as asked, not kept.
    let text = "";
    for (let id = hi - offset; id > hi - offset - n; id--) text += rowText(shape, format, columns, shape.cells(id));
    parts = [Buffer.from(trailing(format) ? text.slice(0, -1) : text)];
    lastId = n > 0 ? hi - offset - n + 1 : undefined;
  }

  // The envelope in CKAN's key order: echoed inputs (sorted), filterops (2.12), records, fields, _links (2.10), total, next_page (2.12).
  const echo: Record<string, unknown> = {
    include_total: includeTotal,
    limit,
    records_format: format,
    resource_id: resource.id,
    sort,
  };
  if (!empty(params.filters)) echo.filters = params.filters;
  if (params.offset !== undefined) echo.offset = offset;
  if (version === "2.12") echo.include_next_page = includeNextPage;
  else echo.total_estimation_threshold = null;
  const result: Record<string, unknown> = Object.fromEntries(
    Object.keys(echo)
      .sort()
      .map((k) => [k, echo[k]]),
  );
  // Python's json.dumps separators, as CKAN writes them (an echoed `_id` list's bytes count); no echoed text has a comma or colon.
  const echoed = JSON.stringify(result).slice(0, -1).replaceAll(",", ", ").replaceAll(":", ": ");
  const head = `{"help": ${JSON.stringify(help)}, "success": true, "result": ${echoed}, "records": ${format === "csv" ? '"' : "["}`;
  let tail = `${format === "csv" ? '"' : "]"}, "fields": ${JSON.stringify(columns.map((i) => shape.fields[i]))}`;
  if (version !== "2.12")
    tail += `, "_links": ${JSON.stringify({ start: "/api/action/datastore_search", next: `/api/action/datastore_search?offset=${offset + limit}` })}`;
  if (includeTotal)
    tail += version !== "2.12" ? `, "total": ${matching}, "total_was_estimated": false` : `, "total": ${matching}`;
  if (includeNextPage && limitGiven && n === limit && n > 0 && lastId !== undefined)
    tail += `, "next_page": ${JSON.stringify({ _id: { [descending ? "lt" : "gt"]: lastId } })}`;
  tail += "}}";
  const work: Work = {
    format,
    rows: n,
    skipped: Math.min(offset, matching),
    listed,
    counted: includeTotal ? matching : undefined,
  };
  return { parts: [Buffer.from(head), ...parts, Buffer.from(tail)], work, format };
}
