import type { Config } from "../config/config.ts";
import type { SiteFacts } from "./site.ts";
import type { UpstreamFetch } from "./types.ts";

// CKAN's `datastore_search_sql`: off by default since CKAN 2.10 (`ckan.datastore.sqlsearch.enabled`),
// when off answered with HTTP 400 and a bare JSON string ("Bad request - Action name not known").
// Whether a site has it is learnt from the first statement sent there and remembered for the
// isolate's life: a site that said no is not asked again. Every other failure (403 for a function
// the site's allow-list refuses, 409 for a PostgreSQL error, 5xx, a time-out) leaves the caller to
// compute the answer another way.

/** A record of a statement whose every column is cast to text: text or null by column alias. */
export type SqlRecord = Record<string, string | null>;

export type SqlAnswer =
  | { ok: true; records: SqlRecord[]; fields: { id: string; type: string }[]; truncated: boolean }
  | { ok: false; why: string };

/**
 * One statement through `datastore_search_sql`, with the token (a private table needs it) and the
 * export's time-out. Never throws: a failure says why, in words for the request log.
 */
export async function searchSql(
  facts: SiteFacts,
  config: Config,
  fetcher: UpstreamFetch,
  sql: string,
  signal?: AbortSignal,
): Promise<SqlAnswer> {
  const site = config.ckanBase;
  if (facts.sqlSearch === false) return { ok: false, why: "datastore_search_sql is off on this site" };
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (config.apiToken !== undefined) headers.authorization = config.apiToken;
  const timeout = AbortSignal.timeout(config.upstreamTimeoutMs);
  let response: Response;
  let text: string;
  try {
    response = await fetcher(
      new Request(`${site}/api/action/datastore_search_sql`, {
        method: "POST",
        headers,
        body: JSON.stringify({ sql }),
        // A redirect would send the statement and the token to another host: never followed.
        redirect: "manual",
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      }),
    );
    text = await response.text();
  } catch {
    return {
      ok: false,
      why: timeout.aborted ? "datastore_search_sql timed out" : "datastore_search_sql could not be reached",
    };
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { ok: false, why: `datastore_search_sql answered HTTP ${response.status} without JSON` };
  }
  if (response.status === 400 && typeof body === "string") {
    facts.sqlSearch = false;
    return { ok: false, why: "datastore_search_sql is off on this site" };
  }
  const envelope =
    body !== null && typeof body === "object"
      ? (body as { success?: unknown; result?: unknown; error?: { __type?: unknown } })
      : undefined;
  const result = envelope?.result as { records?: unknown; fields?: unknown; records_truncated?: unknown } | undefined;
  if (response.ok && envelope?.success === true && Array.isArray(result?.records) && Array.isArray(result?.fields)) {
    facts.sqlSearch = true;
    return {
      ok: true,
      records: result.records as SqlRecord[],
      fields: result.fields as { id: string; type: string }[],
      truncated: result.records_truncated === true,
    };
  }
  // The action exists (CKAN answered it as one): the site has SQL search, this statement failed.
  if (response.status === 403 || response.status === 409) facts.sqlSearch = true;
  const kind = typeof envelope?.error?.__type === "string" ? ` (${envelope.error.__type})` : "";
  return { ok: false, why: `datastore_search_sql answered HTTP ${response.status}${kind}` };
}
