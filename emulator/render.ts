import { HELP_URL, JSON_CONTENT_TYPE } from "./error-answers.ts";
import { filterOpsJson } from "./filters.ts";
import { pageLinks } from "./links.ts";
import type { Plan } from "./plan.ts";
import { pyDumps, RawJson } from "./py-json.ts";
import { chunkEncoder, type ChunkEncoder } from "./records.ts";
import type { Selection } from "./search.ts";
import { idOrder } from "./sort.ts";

// The success envelope, keys in CKAN's order: the echoed inputs (alphabetical, as CKAN's
// validated dict comes out), 2.12's `filterops`, records, fields, 2.10's `_links`, total, 2.12's
// `next_page`. CKAN writes it with Python's json.dumps and splices the records in as PostgreSQL
// wrote them. Records are streamed a slice at a time so a 32000-row page never exists as one string.

const ROWS_PER_CHUNK = 1000;
// U+0000 never survives JSON escaping, so the marker cannot occur anywhere else in the envelope.
const MARKER = "\u0000records\u0000";

export interface RenderOptions {
  /** CKAN 2.10 adds `_links`; 2.12 does not. */
  links?: { path: string; query: URLSearchParams };
  /** 2.12: rows missing from the cached count an unfiltered `total` comes from. */
  staleTotal: number;
}

export function renderResult(plan: Plan, selection: Selection, options: RenderOptions): Response {
  const { params, version } = plan;
  const dictionary = plan.resource.dictionary ?? {};
  // CKAN adds `info` to a field the data dictionary describes; a rank column has none.
  const fields = plan.output.map(({ id, type }) => {
    const info = Object.hasOwn(dictionary, id) ? dictionary[id] : undefined;
    return info === undefined ? { id, type } : { id, type, info };
  });
  const result: Record<string, unknown> = {};
  for (const key of Object.keys(params.echo).sort()) {
    // A given `fields` keeps its place among the inputs but is answered with the column list.
    result[key] = key === "fields" ? fields : params.echo[key];
  }
  if (version === "2.12" && plan.filters !== undefined) result["filterops"] = filterOpsJson(plan.filters);
  result["records"] = new RawJson(MARKER);
  result["fields"] = fields;
  if (options.links) {
    result["_links"] = pageLinks(options.links.path, options.links.query, params.limit, params.offset);
  }
  if (params.includeTotal) Object.assign(result, total(plan, selection.matched, options.staleTotal));
  const nextPage = version === "2.12" ? nextPageFilter(plan, selection) : undefined;
  if (nextPage) result["next_page"] = nextPage;

  const text = pyDumps({ help: HELP_URL, success: true, result });
  const [before = "", after = ""] = text.split(MARKER);
  // csv/tsv records are one JSON string; objects/lists are a JSON array.
  const [open, close] = params.recordsFormat === "csv" || params.recordsFormat === "tsv" ? ['"', '"'] : ["[", "]"];
  const encode = chunkEncoder(params.recordsFormat, plan.table, plan.output, version);
  const body = streamRecords(before + open, close + after, selection, encode);
  return new Response(body, { status: 200, headers: { "content-type": JSON_CONTENT_TYPE } });
}

/** `{"_id": {"gt": last}}` after a full page in `_id` order: merge it into `filters` for the next. */
function nextPageFilter(plan: Plan, selection: Selection): Record<string, unknown> | undefined {
  const last = selection.rows[selection.rows.length - 1];
  const direction = idOrder(plan.order);
  if (!plan.params.includeNextPage || !plan.params.limitGiven || direction === undefined) return undefined;
  if (last === undefined || selection.rows.length < plan.params.limit) return undefined;
  return { _id: { [direction === "asc" ? "gt" : "lt"]: last.index + 1 } };
}

/**
 * CKAN 2.10 counts exactly unless asked to estimate an unfiltered table, when it reads
 * PostgreSQL's planner statistics instead; those lag behind the table, so the estimate here is
 * deliberately 10% short. CKAN 2.12 never estimates and never says so, but takes an unfiltered
 * table's total from a cached count that rows written outside its API leave behind (`staleTotal`).
 */
function total(plan: Plan, matched: number, staleTotal: number): Record<string, unknown> {
  const unfiltered = plan.condition === undefined && plan.searches.length === 0 && !plan.params.distinct;
  if (plan.version === "2.12") {
    return { total: unfiltered ? Math.max(0, plan.table.rows - staleTotal) : matched };
  }
  const threshold = plan.params.totalEstimationThreshold;
  if (threshold !== null && unfiltered) {
    const estimate = Math.floor(plan.table.rows * 0.9);
    if (estimate >= threshold) return { total: estimate, total_was_estimated: true };
  }
  return { total: matched, total_was_estimated: false };
}

function streamRecords(
  head: string,
  tail: string,
  selection: Selection,
  encode: ChunkEncoder,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const { rows } = selection;
  let position = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      try {
        let text = position === 0 ? head : "";
        const end = Math.min(rows.length, position + ROWS_PER_CHUNK);
        text += encode(rows.slice(position, end), position === 0);
        position = end;
        if (position >= rows.length) text += tail;
        controller.enqueue(encoder.encode(text));
        if (position >= rows.length) controller.close();
      } catch (error) {
        controller.error(error);
      }
    },
  });
}
