import { HttpError } from "../errors.ts";
import { isHiddenColumn } from "../ckan/columns.ts";
import type { CkanClient } from "../ckan/client.ts";
import type { SearchRequest } from "../ckan/types.ts";

/** A column as the link builder shows it: CKAN's id and type, and the data dictionary's words. */
export interface ColumnInfo {
  id: string;
  type: string;
  label?: string;
  description?: string;
  /** Every value the column holds, when it holds few (offered in filter pickers). */
  values?: (string | number | boolean)[];
  /** How many different values the column holds, when CKAN counted them. */
  distinct?: number;
}

export interface TableInfo {
  columns: ColumnInfo[];
  rows: number | undefined;
  rowsEstimated: boolean;
}

/** A column with at most this many different values gets them listed. */
export const MAX_VALUES = 25;
/** Rows CKAN reads before its DISTINCT (CKAN 2.11+ applies DISTINCT to the page it has cut). */
const DISTINCT_PAGE = 2000;
/** Columns probed for values, at most: each probe is one count of distinct values upstream. */
const MAX_PROBED = 16;
/** Types whose values are worth offering as a list: text, booleans, whole numbers, dates. */
const PICKABLE = /^(text|varchar|bpchar|char|bool|int|int2|int4|int8|date)$/;

const text = (value: unknown): string | undefined =>
  typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;

/** CKAN's `fields[]` with the data dictionary (`info.label`, `info.notes`) where the site has one. */
function columnsOf(fields: unknown[]): ColumnInfo[] {
  return fields.flatMap((raw) => {
    const field = raw as { id?: unknown; type?: unknown; info?: Record<string, unknown> };
    if (typeof field.id !== "string" || isHiddenColumn(field.id)) return [];
    const column: ColumnInfo = { id: field.id, type: typeof field.type === "string" ? field.type : "text" };
    const label = text(field.info?.label);
    const description = text(field.info?.notes);
    if (label !== undefined && label !== field.id) column.label = label;
    if (description !== undefined) column.description = description;
    return [column];
  });
}

/** The table's columns and row count: one `limit: 0` call. */
export async function tableInfo(client: CkanClient, resourceId: string): Promise<TableInfo> {
  const result = await client.search({ resource_id: resourceId, limit: 0, include_total: true });
  return {
    columns: columnsOf(result.fields),
    rows: typeof result.total === "number" ? result.total : undefined,
    rowsEstimated: result.total_was_estimated === true,
  };
}

/**
 * A column's values when it has few. CKAN counts distinct values over the whole table (the total of
 * a `distinct` search), but since 2.11 applies DISTINCT only to the page it cut: the values are
 * listed only when the page held all of them, so a picker never offers part of a list as the whole.
 * A site that refuses `distinct` just leaves the column without values; false says CKAN failed to
 * answer, and the answer then is not cached (the failure would outlive itself).
 */
async function probeValues(client: CkanClient, resourceId: string, column: ColumnInfo): Promise<boolean> {
  const body: SearchRequest & { distinct: boolean } = {
    resource_id: resourceId,
    fields: [column.id],
    distinct: true,
    limit: DISTINCT_PAGE,
    include_total: true,
    records_format: "lists",
  };
  let result;
  try {
    result = await client.search(body);
  } catch (error) {
    // CKAN refusing `distinct` is an answer; its failing (5xx, no answer) is not.
    return error instanceof HttpError && error.status < 500;
  }
  if (typeof result.total !== "number" || result.total_was_estimated === true) return true;
  column.distinct = result.total;
  if (result.total > MAX_VALUES || !Array.isArray(result.records)) return true;
  const values: (string | number | boolean)[] = [];
  for (const record of result.records) {
    const cell = Array.isArray(record) ? record[0] : undefined;
    if (cell === undefined) continue;
    const value: unknown = JSON.parse(cell);
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") values.push(value);
  }
  // A null counts as a distinct value but cannot be a filter value.
  const nulls = result.records.length - values.length;
  if (values.length + nulls !== result.total) return true;
  column.values = values.sort((a, b) =>
    typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b)),
  );
  return true;
}

/** Fills `values`/`distinct` of the pickable columns, a few probes at a time: how many CKAN failed to answer. */
export async function probeDistinctValues(
  client: CkanClient,
  resourceId: string,
  columns: ColumnInfo[],
  concurrency: number,
): Promise<number> {
  const queue = columns.filter((c) => PICKABLE.test(c.type)).slice(0, MAX_PROBED);
  let failed = 0;
  const worker = async (): Promise<void> => {
    for (let column = queue.shift(); column !== undefined; column = queue.shift())
      if (!(await probeValues(client, resourceId, column))) failed++;
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
  return failed;
}
