import { HELP_URL, JSON_CONTENT_TYPE } from "./error-answers.ts";
import { pageLinks } from "./links.ts";
import type { Plan } from "./plan.ts";
import { chunkEncoder, type ChunkEncoder } from "./records.ts";
import type { Selection } from "./search.ts";
import { idOrder } from "./sort.ts";

// The success envelope, keys in CKAN's order: the echoed inputs (alphabetical, as CKAN's
// validated dict comes out), records, fields, _links, total. Records are streamed a slice at a
// time so a 32000-row page never exists as one string.

const ROWS_PER_CHUNK = 1000;
// JSON.stringify writes U+0000 as an escape no real value produces, so the marker is unique.
const MARKER = "\u0000records\u0000";

export interface RenderOptions {
  /** CKAN 2.10 adds `_links`; 2.12 does not. */
  links?: { path: string; query: URLSearchParams };
  /** CKAN 2.12's keyset paging hint. */
  nextPage: boolean;
}

export function renderResult(plan: Plan, selection: Selection, options: RenderOptions): Response {
  const { params } = plan;
  const fields = plan.output.map(({ id, type }) => ({ id, type }));
  const result: Record<string, unknown> = {};
  for (const key of Object.keys(params.echo).sort()) {
    // A given `fields` keeps its place among the inputs but is answered with the column list.
    result[key] = key === "fields" ? fields : params.echo[key];
  }
  result["records"] = MARKER;
  result["fields"] = fields;
  if (options.links) {
    result["_links"] = pageLinks(options.links.path, options.links.query, params.limit, params.offset);
  }
  const nextPage = options.nextPage ? nextPageFilter(plan, selection) : undefined;
  if (nextPage) result["next_page"] = nextPage;
  if (params.includeTotal) Object.assign(result, total(plan, selection.matched));

  const text = JSON.stringify({ help: HELP_URL, success: true, result });
  const [before = "", after = ""] = text.split(JSON.stringify(MARKER));
  // csv/tsv records are one JSON string; objects/lists are a JSON array.
  const [open, close] = params.recordsFormat === "csv" || params.recordsFormat === "tsv" ? ['"', '"'] : ["[", "]"];
  const encode = chunkEncoder(params.recordsFormat, plan.output);
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
 * CKAN counts exactly unless asked to estimate an unfiltered table, when it reads PostgreSQL's
 * planner statistics instead. Those lag behind the table, so the estimate here is deliberately
 * 10% short, which keeps clients honest about not trusting an estimated total.
 */
function total(plan: Plan, matched: number): { total: number; total_was_estimated: boolean } {
  const threshold = plan.params.totalEstimationThreshold;
  const unfiltered = plan.conditions.length === 0 && plan.searches.length === 0 && !plan.params.distinct;
  if (threshold !== null && unfiltered) {
    const estimate = Math.floor(plan.resource.rows * 0.9);
    if (estimate >= threshold) return { total: estimate, total_was_estimated: true };
  }
  return { total: matched, total_was_estimated: false };
}

function streamRecords(head: string, tail: string, selection: Selection, encode: ChunkEncoder): ReadableStream<Uint8Array> {
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
