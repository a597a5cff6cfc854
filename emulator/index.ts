import { LruCache } from "./lru-cache.ts";
import { EmulatorError, errorResponse, noSuchPath, notAuthorized, notFound } from "./error-answers.ts";
import { plan } from "./plan.ts";
import { renderResult } from "./render.ts";
import { parseRequest } from "./request.ts";
import { findResource } from "./resources.ts";
import { select, type Matched } from "./search.ts";
import { validateSchema } from "./validate.ts";

// A CKAN `datastore_search` action that answers as CKAN 2.10 (or 2.12) does, over generated
// tables, so the export can be developed and tested without a CKAN site.

export { EMULATOR_RESOURCES } from "./resources.ts";

export interface EmulatorOptions {
  /** The API token that unlocks the private resource, compared with the raw Authorization header. */
  token?: string;
  /** "2.12" accepts include_next_page, answers next_page, takes {gt,gte,lt,lte} filters, drops _links. */
  version?: "2.10" | "2.12";
  /** ckan.datastore.search.rows_max: a larger limit is capped silently and echoed capped. */
  rowsMax?: number;
}

export interface Emulator {
  fetch(request: Request): Promise<Response>;
  /** datastore_search calls answered so far, errors included. */
  requests: number;
}

// Any mount prefix and language segment may come first: /data/en/api/action/datastore_search.
const ACTION_PATH = /\/api(?:\/3)?\/action\/datastore_search\/?$/;
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
    // A wrong or missing token is not an error: the caller is anonymous, which only private data refuses.
    const authorized = options.token !== undefined && request.headers.get("authorization") === options.token;
    if (resource.private && !authorized) throw notAuthorized(resource.id);

    const query = plan(params, resource, version === "2.12");
    const path = url.pathname.slice(url.pathname.lastIndexOf("/api/"));
    return renderResult(query, select(query, cache), {
      links: version === "2.10" ? { path, query: linkQuery } : undefined,
      nextPage: version === "2.12",
    });
  }

  const emulator: Emulator = {
    requests: 0,
    async fetch(request) {
      const url = new URL(request.url);
      try {
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
