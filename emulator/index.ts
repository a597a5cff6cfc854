import { LruCache } from "./lru-cache.ts";
import { EmulatorError, errorResponse, noSuchPath, notAuthorized, notFound } from "./error-answers.ts";
import { plan } from "./plan.ts";
import { renderResult } from "./render.ts";
import { parseRequest } from "./request.ts";
import { findResource } from "./resources.ts";
import { select, type Matched } from "./search.ts";
import { validateSchema } from "./validate.ts";

// A CKAN `datastore_search` action that answers as CKAN 2.10 (or 2.12) does, over generated
// tables, so the export can be developed and tested without a CKAN site. Held byte for byte
// against recorded answers of real CKAN (test/emulator.test.ts, test/emulator-2.12.test.ts).

export { EMULATOR_RESOURCES } from "./resources.ts";

export interface EmulatorOptions {
  /** The API token that unlocks the private resource, compared with the raw Authorization header. */
  token?: string;
  /**
   * "2.12" accepts include_next_page and answers next_page, parses filters into `filterops`
   * ({gt,gte,lt,lte}, $or, $and), writes timestamps with milliseconds, drops _links and
   * total_was_estimated, and counts an unfiltered table from a cache (see staleTotal).
   */
  version?: "2.10" | "2.12";
  /** ckan.datastore.search.rows_max: a larger limit is capped silently and echoed capped. */
  rowsMax?: number;
  /**
   * 2.12 only: rows missing from the cached row count CKAN answers an unfiltered search's `total`
   * with (rows written outside CKAN's API do not update it), so `total` is that much too low.
   */
  staleTotal?: number;
}

export interface Emulator {
  fetch(request: Request): Promise<Response>;
  /** datastore_search calls answered so far, errors included. */
  requests: number;
}

// Any mount prefix and language segment may come first: /data/en/api/action/datastore_search.
const ACTION_PATH = /\/api(?:\/3)?\/action\/datastore_search\/?$/;
const RESOURCE_SHOW_PATH = /\/api(?:\/3)?\/action\/resource_show\/?$/;
const SCANNED_QUERIES_KEPT = 4;

export function createEmulator(options: EmulatorOptions = {}): Emulator {
  const version = options.version ?? "2.10";
  const rowsMax = options.rowsMax ?? 32000;
  const cache = new LruCache<Matched>(SCANNED_QUERIES_KEPT);

  async function search(request: Request, url: URL): Promise<Response> {
    const { params: raw, linkQuery } = await parseRequest(request, url);
    const params = validateSchema(raw, { rowsMax, nextPage: version === "2.12" });
    const resource = findResource(params.resourceId);
    if (resource === undefined) throw notFound(params.resourceId);
    // CKAN swaps an alias for the resource id before anything else, so the answer names the id.
    params.echo["resource_id"] = resource.id;
    // A wrong or missing token is not an error: the caller is anonymous, which only private data refuses.
    const authorized = options.token !== undefined && request.headers.get("authorization") === options.token;
    if (resource.private && !authorized) throw notAuthorized(resource.id, version);

    const query = plan(params, resource, version);
    const path = url.pathname.slice(url.pathname.lastIndexOf("/api/"));
    return renderResult(query, select(query, cache), {
      links: version === "2.10" ? { path, query: linkQuery } : undefined,
      staleTotal: options.staleTotal ?? 0,
    });
  }

  /** `resource_show?id=`: the resource's name and description (what the worker's discovery reads). */
  function show(request: Request, url: URL): Response {
    const resource = findResource(url.searchParams.get("id") ?? "");
    if (resource === undefined) throw notFound(url.searchParams.get("id") ?? "");
    const authorized = options.token !== undefined && request.headers.get("authorization") === options.token;
    if (resource.private && !authorized) throw notAuthorized(resource.id, version);
    const result = { id: resource.id, name: resource.name, description: resource.description, datastore_active: true, format: "CSV" };
    return Response.json({ help: "http://127.0.0.1:5000/api/3/action/help_show?name=resource_show", success: true, result });
  }

  const emulator: Emulator = {
    requests: 0,
    async fetch(request) {
      const url = new URL(request.url);
      try {
        if (RESOURCE_SHOW_PATH.test(url.pathname)) return show(request, url);
        if (!ACTION_PATH.test(url.pathname)) throw noSuchPath();
        emulator.requests++;
        return await search(request, url);
      } catch (error) {
        if (error instanceof EmulatorError) return errorResponse(error);
        throw error;
      }
    },
  };
  return emulator;
}
