import { HttpError } from "../errors.ts";

// CKAN's `datastore_search_sql`: off by default since CKAN 2.10 (`ckan.datastore.sqlsearch.enabled`),
// when off answered with HTTP 400 and a bare JSON string ("Bad request - Action name not known").
// Whether a site has it is learnt from the first statement sent there and remembered for the
// isolate's life: a site that said no is not asked again. The statement goes through the one
// upstream client (CkanClient.searchSql: its retries, time-out, request count, redirect refusal and
// redaction); every failure (403 for a function the site's allow-list refuses, 409 for a PostgreSQL
// error, 5xx after the retries, a time-out) leaves the caller to compute the answer another way.

/** A record of a statement whose every column is cast to text: text or null by column alias. */
export type SqlRecord = Record<string, string | null>;

export type SqlAnswer =
  | { ok: true; records: SqlRecord[]; fields: { id: string; type: string }[]; truncated: boolean }
  | { ok: false; why: string };

/** An answer of `datastore_search_sql`, and what it tells of the site: whether it has SQL search. */
export interface SqlReply {
  answer: SqlAnswer;
  /** Undefined: the answer does not tell. */
  sqlSearch: boolean | undefined;
}

/** What `searchSql` uses of a CKAN site (a CkanSite is one). */
export interface SqlSite {
  facts: { sqlSearch: boolean | undefined };
  client: { searchSql(sql: string, signal?: AbortSignal, maxRequests?: number): Promise<SqlReply> };
}

const OFF: SqlAnswer = { ok: false, why: "datastore_search_sql is off on this site" };

/**
 * One statement through the site's `datastore_search_sql`, with the token (a private table needs
 * it), the export's time-out and retries, within `maxRequests` of the site's client. Never throws:
 * a failure says why, in words for the request log (never a secret: the client redacts them).
 */
export async function searchSql(
  site: SqlSite,
  sql: string,
  signal?: AbortSignal,
  maxRequests?: number,
): Promise<SqlAnswer> {
  if (site.facts.sqlSearch === false) return OFF;
  let reply: SqlReply;
  try {
    reply = await site.client.searchSql(sql, signal, maxRequests);
  } catch (error) {
    const why = error instanceof HttpError ? error.message : "the request was stopped";
    return { ok: false, why: `datastore_search_sql failed: ${why}` };
  }
  if (reply.sqlSearch !== undefined) site.facts.sqlSearch = reply.sqlSearch;
  return reply.answer;
}

/**
 * Reads an answer of `datastore_search_sql` that is neither a redirect nor worth retrying (the
 * client judged those): rows, SQL search off, or a statement the site refused, said with what CKAN
 * named the error (redacted: upstream text may echo the token).
 */
export function readSqlAnswer(status: number, text: string, redact: (text: string) => string): SqlReply {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return {
      answer: { ok: false, why: `datastore_search_sql answered HTTP ${status} without JSON` },
      sqlSearch: undefined,
    };
  }
  if (status === 400 && typeof body === "string") return { answer: OFF, sqlSearch: false };
  const envelope =
    body !== null && typeof body === "object"
      ? (body as { success?: unknown; result?: unknown; error?: { __type?: unknown } })
      : undefined;
  const result = envelope?.result as { records?: unknown; fields?: unknown; records_truncated?: unknown } | undefined;
  if (
    status >= 200 &&
    status < 300 &&
    envelope?.success === true &&
    Array.isArray(result?.records) &&
    Array.isArray(result?.fields)
  ) {
    const fields = (result.fields as { id: unknown; type: unknown }[]).map(({ id, type }) => ({
      id: redact(String(id)),
      type: redact(String(type)),
    }));
    const answer: SqlAnswer = {
      ok: true,
      records: result.records as SqlRecord[],
      fields,
      truncated: result.records_truncated === true,
    };
    return { answer, sqlSearch: true };
  }
  // The action exists (CKAN answered it as one): the site has SQL search, this statement failed.
  const exists = status === 403 || status === 409 ? true : undefined;
  const type = envelope?.error?.__type;
  const kind = typeof type === "string" ? ` (${redact(type).slice(0, 80)})` : "";
  return { answer: { ok: false, why: `datastore_search_sql answered HTTP ${status}${kind}` }, sqlSearch: exists };
}
