import { LruCache } from "./lru-cache.ts";
import { EmulatorError, errorResponse, noSuchPath, notAuthorized, notFound } from "./error-answers.ts";
import { plan } from "./plan.ts";
import { renderResult } from "./render.ts";
import { parseRequest } from "./request.ts";
import { findResource } from "./resources.ts";
import { select, type Matched } from "./search.ts";
import { validateSchema } from "./validate.ts";
import type { Version } from "./cells.ts";
import {
  packageSearch,
  packageShow,
  resourceShow,
  statusShow,
  TABLE_METADATA,
  tableMetadata,
  unknownAction,
} from "./site.ts";
import { startPglite, type SqlEngine, type SqlEngineFactory } from "./sql-engine.ts";
import { searchSql } from "./sql-search.ts";

// A CKAN `datastore_search` action that answers as CKAN 2.10, 2.11 or 2.12 does, over generated
// tables, so the export can be developed and tested without a CKAN site, with the few site actions
// a client finding its way asks (site.ts). Held byte for byte against recorded answers of real CKAN
// (test/emulator.test.ts, test/emulator-2.12.test.ts, test/emulator-recorded.test.ts).

export { EMULATOR_RESOURCES } from "./resources.ts";

/** The CKAN releases the emulator can answer as. */
export const CKAN_VERSIONS = ["2.10", "2.11", "2.12"] as const satisfies readonly Version[];
export type CkanVersion = Version;

export interface EmulatorOptions {
  /** The API token that unlocks the private resource, compared with the raw Authorization header. */
  token?: string;
  /**
   * "2.12" accepts include_next_page and answers next_page, parses filters into `filterops`
   * ({gt,gte,lt,lte}, $or, $and), writes timestamps with milliseconds, drops _links and
   * total_was_estimated, and counts an unfiltered table from a cache (see staleTotal).
   */
  version?: CkanVersion;
  /**
   * false: a site without the datastore plugin (status_show does not list it; datastore_search is
   * an action it does not know). Default true.
   */
  datastore?: boolean;
  /** ckan.datastore.search.rows_max: a larger limit is capped silently and echoed capped. */
  rowsMax?: number;
  /**
   * 2.12 only: rows missing from the cached row count CKAN answers an unfiltered search's `total`
   * with (rows written outside CKAN's API do not update it), so `total` is that much too low.
   */
  staleTotal?: number;
  /**
   * ckan.datastore.sqlsearch.enabled: datastore_search_sql answered by a real PostgreSQL
   * (sql-search.ts). Default false, CKAN's own default since 2.10, for every version played.
   */
  sql?: boolean;
  /**
   * The PostgreSQL behind datastore_search_sql. Default: PGlite in this process (Node only),
   * started on the first SQL query and shared by every emulator of the process.
   */
  sqlEngine?: SqlEngineFactory;
  /** Where to say that PostgreSQL took a while to get a table ready (npm start passes the console). */
  sqlLog?: (line: string) => void;
}

export interface Emulator {
  fetch(request: Request): Promise<Response>;
  /** datastore_search calls answered so far, errors included. */
  requests: number;
}

// Any mount prefix and language segment may come first: /data/en/api/action/datastore_search.
const ACTION_PATH = /\/api(?:\/3)?\/action\/([^/]+)\/?$/;
const SCANNED_QUERIES_KEPT = 4;

// One PGlite for the process: the tables are the same generated ones for every emulator.
let sharedEngine: Promise<SqlEngine> | undefined;
const sharedPglite = (): Promise<SqlEngine> => {
  sharedEngine ??= startPglite();
  return sharedEngine;
};

export function createEmulator(options: EmulatorOptions = {}): Emulator {
  // The library's default is what the specs were written against; the demo's is npm start's.
  const version = options.version ?? "2.10";
  const rowsMax = options.rowsMax ?? 32000;
  const datastore = options.datastore ?? true;
  const cache = new LruCache<Matched>(SCANNED_QUERIES_KEPT);
  // A wrong or missing token is not an error: the caller is anonymous, which only private data refuses.
  const factory = options.sqlEngine;
  let ownEngine: Promise<SqlEngine> | undefined;
  const sqlEngine = factory === undefined ? sharedPglite : (): Promise<SqlEngine> => (ownEngine ??= factory());
  const isAuthorized = (request: Request): boolean =>
    options.token !== undefined && request.headers.get("authorization") === options.token;

  async function search(request: Request, url: URL): Promise<Response> {
    const { params: raw, linkQuery } = await parseRequest(request, url);
    const path = url.pathname.slice(url.pathname.lastIndexOf("/api/"));
    if (raw["resource_id"] === TABLE_METADATA) return tableMetadata(raw, version, path, linkQuery);
    const params = validateSchema(raw, { rowsMax, nextPage: version === "2.12" });
    const resource = findResource(params.resourceId);
    if (resource === undefined) throw notFound(params.resourceId);
    // CKAN swaps an alias for the resource id before anything else, so the answer names the id.
    params.echo["resource_id"] = resource.id;
    if (resource.private && !isAuthorized(request)) throw notAuthorized(resource.id, version);

    const query = plan(params, resource, version);
    return renderResult(query, select(query, cache), {
      links: version === "2.12" ? undefined : { path, query: linkQuery },
      staleTotal: options.staleTotal ?? 0,
    });
  }

  const emulator: Emulator = {
    requests: 0,
    async fetch(request) {
      const url = new URL(request.url);
      try {
        const action = ACTION_PATH.exec(url.pathname)?.[1];
        if (action === undefined) throw noSuchPath();
        switch (action) {
          case "status_show":
            return statusShow(version, datastore);
          case "resource_show":
            return resourceShow(url, isAuthorized(request), datastore);
          case "package_show":
            return packageShow(url, isAuthorized(request), datastore);
          case "package_search":
            return packageSearch(url, isAuthorized(request), datastore);
          case "datastore_search_sql":
            if (!datastore || options.sql !== true) throw unknownAction(action);
            return await searchSql(request, url, {
              engine: sqlEngine,
              rowsMax,
              authorized: isAuthorized(request),
              log: options.sqlLog,
            });
          case "datastore_search":
            if (!datastore) throw unknownAction(action);
            emulator.requests++;
            return await search(request, url);
          default:
            throw unknownAction(action);
        }
      } catch (error) {
        if (error instanceof EmulatorError) return errorResponse(error);
        throw error;
      }
    },
  };
  return emulator;
}
