import { configError, type HttpError, SubrequestBudgetExceeded, UpstreamFailure } from "../errors.ts";
import { redactorOf } from "../log/redact.ts";
import type { CopiedRecords, RecordsReader } from "../rows/batch.ts";
import { memberAt, NotTheJson, QUOTE, skipStringBytes } from "../rows/json-bytes.ts";
import { own, release } from "../rows/owned-bytes.ts";
import { ckanError } from "./error-answers.ts";
import { parseAnswer } from "./raw-json.ts";
import { readSqlAnswer, type SqlReply } from "./sql-search.ts";
import type { SearchRequest, SearchResult, UpstreamFetch } from "./types.ts";

const utf8 = new TextDecoder();

/**
 * The rest of the answer as text with `null` for its records, and a function that reads the
 * records with `reader` from the answer's bytes when the page's turn comes (then frees them): a page
 * waiting in flight holds only its answer, not the output made from it (for JSON, 2-3 times
 * larger). Undefined when the answer has no records string there.
 */
function deferRecords(
  bytes: Uint8Array,
  reader: RecordsReader,
): { envelope: string; copy: () => CopiedRecords } | undefined {
  try {
    const at = memberAt(bytes, "result", "records");
    if (at < 0 || bytes[at] !== QUOTE) return undefined;
    const end = skipStringBytes(bytes, at);
    const copy = (): CopiedRecords => {
      try {
        return reader(bytes, at);
      } catch (error) {
        // The same answer read as text would give a records string no reader could read.
        if (error instanceof NotTheJson)
          throw new UpstreamFailure(502, "CKAN's CSV records could not be read.", { cause: error });
        throw error;
      } finally {
        release(bytes);
      }
    };
    return { envelope: `${utf8.decode(bytes.subarray(0, at))}null${utf8.decode(bytes.subarray(end))}`, copy };
  } catch (error) {
    if (error instanceof NotTheJson) return undefined;
    throw error;
  }
}

/** The longest `Retry-After` worth waiting for inside one export; longer is passed on to the caller. */
const MAX_RETRY_WAIT_MS = 20_000;

export interface UpstreamStats {
  requests: number;
  bytes: number;
  milliseconds: number;
}

/** Seconds or an HTTP date, as RFC 9110 allows; undefined when absent or unreadable. */
function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function abortion(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

/**
 * Every string in a small JSON value (CKAN's `fields`: names, types, the data dictionary) with any
 * piece of a secret removed: a column name becomes a CSV header, a discovery answer, a log line.
 */
function redactStrings(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === "string") return redact(value);
  if (Array.isArray(value)) return value.map((item) => redactStrings(item, redact));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [redact(key), redactStrings(item, redact)]));
  }
  return value;
}

/**
 * The 502 of an upstream answering with a redirect: its status and where it points (the origin
 * only: a location's path and query may carry anything), so an operator can fix CKAN_BASE_URL.
 */
export function redirectRefused(response: Response, from: string, redact: (text: string) => string): HttpError {
  const location = response.headers.get("location");
  let target = "no location";
  if (location !== null) {
    try {
      target = redact(new URL(location, from).origin);
    } catch {
      target = "an unreadable location";
    }
  }
  return new UpstreamFailure(
    502,
    `CKAN answered HTTP ${response.status}, a redirect to ${target}, which this worker does not follow (it would send the query and the token elsewhere). If the site moved, an operator should set CKAN_BASE_URL to its new address.`,
  );
}

const isLoopback = (hostname: string): boolean => /^(localhost|127\.\d+\.\d+\.\d+|\[::1\]|0\.0\.0\.0)$/i.test(hostname);

/**
 * Whether this isolate is served at a loopback address (`wrangler dev`, `npm start`): then a
 * loopback CKAN_BASE_URL is right, and nothing answering there is a local CKAN not started yet, not
 * a deployed worker's misconfiguration. Each request notes where it was served.
 */
let servedLocally = false;
export const noteServedAt = (url: URL): void => {
  servedLocally = isLoopback(url.hostname);
};

const retryable = (status: number): boolean => status === 429 || status >= 500;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * What the client needs of the worker's settings (a `Config` is one): where CKAN is, the token it
 * sends, the secrets no upstream text may echo, and how long and how often it tries.
 */
export interface ClientSettings {
  /** `{base}/api/action/datastore_search`; the SQL action sits beside it. */
  datastoreSearchUrl: string;
  /** Sent raw in `Authorization`, and redacted from everything upstream says. */
  apiToken: string | undefined;
  /** Never sent; redacted from everything upstream says, as the token is. */
  adminToken: string | undefined;
  linkSigningKey: string | undefined;
  upstreamTimeoutMs: number;
  upstreamRetries: number;
  retryBaseMs: number;
}

/** One POST to a CKAN action, and how its answer is read. */
interface Call<T> {
  url: string;
  body: unknown;
  /** Reads an answer that is neither a redirect nor worth retrying, from its whole bytes (theirs to release). */
  read: (response: Response, bytes: Uint8Array) => T;
  /** A 200 is handed back unread, to be read as it arrives (`open`). */
  streamed?: boolean;
  /** The most requests this client may have made once the call ends, retries included. */
  maxRequests?: number;
}

type Outcome<T> = { result: T } | { response: Response } | { retry: true; error: HttpError; retryAfterMs?: number };

/**
 * Calls CKAN's actions (`datastore_search`, `datastore_search_sql`): POST with a JSON body and the
 * raw token in `Authorization`, a time-out on every attempt, bounded retries with jittered backoff
 * on network errors, 429 and 5xx, none on 4xx, redirects refused, every attempt counted. Every
 * failure becomes an HttpError whose message never holds a secret.
 */
export class CkanClient {
  readonly stats: UpstreamStats = { requests: 0, bytes: 0, milliseconds: 0 };

  /** How long CKAN may take to answer, or to send more of an answer being read (UPSTREAM_TIMEOUT_SECONDS). */
  get timeoutMs(): number {
    return this.#settings.upstreamTimeoutMs;
  }
  readonly #settings: ClientSettings;
  readonly #fetch: UpstreamFetch;

  constructor(settings: ClientSettings, fetcher: UpstreamFetch) {
    this.#settings = {
      datastoreSearchUrl: settings.datastoreSearchUrl,
      apiToken: settings.apiToken,
      adminToken: settings.adminToken,
      linkSigningKey: settings.linkSigningKey,
      upstreamTimeoutMs: settings.upstreamTimeoutMs,
      upstreamRetries: settings.upstreamRetries,
      retryBaseMs: settings.retryBaseMs,
    };
    this.#fetch = fetcher;
    this.redact = redactorOf([settings.apiToken, settings.adminToken, settings.linkSigningKey]);
  }

  /**
   * Removes any piece of a secret from text that came from upstream, which could echo the request
   * (or anything a proxy in front of CKAN holds): applied before the text is quoted or cut.
   */
  readonly redact: (text: string) => string;

  /**
   * One `datastore_search`. With `reader`, the records of a successful answer are read straight from
   * its bytes by `result.copy()` (and `result.records` is empty); an answer of another shape is read
   * as usual.
   */
  async search(body: SearchRequest, signal?: AbortSignal, reader?: RecordsReader): Promise<SearchResult> {
    const url = this.#settings.datastoreSearchUrl;
    const read = (response: Response, bytes: Uint8Array) => this.#readSearch(response, bytes, reader);
    return (await this.#retrying({ url, body, read }, signal)) as SearchResult;
  }

  /**
   * One `datastore_search` whose answer is read as it arrives (ckan/streamed-page.ts): retried and
   * refused as `search` until CKAN answers 200, then the response with its body unread (`signal` still
   * ends its reading; the time-out no longer does: its reader bounds each read, see streamed-page.ts).
   * `finished` makes the result once the body is read.
   */
  async open(body: SearchRequest, signal?: AbortSignal): Promise<Response> {
    const url = this.#settings.datastoreSearchUrl;
    const read = (response: Response, bytes: Uint8Array) => this.#readSearch(response, bytes, undefined);
    return (await this.#retrying({ url, body, read, streamed: true }, signal)) as Response;
  }

  /**
   * One statement through `datastore_search_sql` (see sql-search.ts), retried, counted and refused
   * as `search` is. A statement CKAN refuses, or a site with SQL search off, is an answer saying so;
   * `maxRequests` caps this client's requests, this one's retries included (SUBREQUEST_LIMIT).
   */
  async searchSql(sql: string, signal?: AbortSignal, maxRequests?: number): Promise<SqlReply> {
    const url = `${this.#settings.datastoreSearchUrl}_sql`;
    const read = (response: Response, bytes: Uint8Array): SqlReply => {
      try {
        return readSqlAnswer(response.status, utf8.decode(bytes), this.redact);
      } finally {
        release(bytes);
      }
    };
    const call: Call<SqlReply> = { url, body: { sql }, read };
    if (maxRequests !== undefined) call.maxRequests = maxRequests;
    return (await this.#retrying(call, signal)) as SqlReply;
  }

  /** The result of an answer `open` gave, read to its end: its envelope (records null), or its whole bytes. */
  finished(
    response: Response,
    answer: { envelope: string } | { whole: Uint8Array },
    bytes: number,
    reader?: RecordsReader,
  ): SearchResult {
    this.stats.bytes += bytes;
    if ("envelope" in answer) {
      const result = this.#unwrap(response, () => JSON.parse(answer.envelope));
      result.responseBytes = bytes;
      return result;
    }
    return this.#readSearch(response, own(answer.whole), reader, bytes);
  }

  async #retrying<T>(call: Call<T>, signal: AbortSignal | undefined): Promise<T | Response> {
    const { upstreamRetries, retryBaseMs } = this.#settings;
    for (let attempt = 0; ; attempt++) {
      if (call.maxRequests !== undefined && this.stats.requests >= call.maxRequests) {
        throw new SubrequestBudgetExceeded(
          `Asking CKAN again would pass the ${call.maxRequests} requests one request to this worker may make (SUBREQUEST_LIMIT).`,
        );
      }
      const outcome = await this.#attempt(call, signal);
      if ("response" in outcome) return outcome.response;
      if (!("retry" in outcome)) return outcome.result;
      const backoff = retryBaseMs * 2 ** attempt * (0.5 + Math.random());
      const wait = outcome.retryAfterMs ?? backoff;
      if (attempt >= upstreamRetries || wait > MAX_RETRY_WAIT_MS) throw outcome.error;
      await sleep(wait);
      signal?.throwIfAborted();
    }
  }

  /** One attempt: the request sent, its answer received (and read whole, unless streamed), then judged. */
  async #attempt<T>(call: Call<T>, signal: AbortSignal | undefined): Promise<Outcome<T>> {
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
    if (this.#settings.apiToken !== undefined) headers.authorization = this.#settings.apiToken;
    // CKAN has UPSTREAM_TIMEOUT_SECONDS to answer, and to send an answer read whole; an answer read as
    // it arrives waits, unread, for its page's turn as long as the pages before it take to write (a
    // slow download), so from then on only a read that waits that long for bytes fails (streamed-page.ts).
    const timeout = new AbortController();
    const request = new Request(call.url, {
      method: "POST",
      headers,
      body: JSON.stringify(call.body),
      signal: signal ? AbortSignal.any([signal, timeout.signal]) : timeout.signal,
      // A redirect would re-send the query (and the token) to wherever the upstream points: never followed.
      redirect: "manual",
    });
    const started = Date.now();
    this.stats.requests++;
    const timer = setTimeout(
      () => timeout.abort(new DOMException("CKAN did not answer in time", "TimeoutError")),
      this.#settings.upstreamTimeoutMs,
    );
    let response: Response;
    let bytes: Uint8Array;
    try {
      // Raced against the signal too: a fetch implementation that ignores it must not hang an export.
      const aborted = abortion(request.signal);
      response = await Promise.race([this.#fetch(request), aborted]);
      // Read as it arrives, by the caller: only an answer to read as before is read here.
      if (call.streamed && response.status === 200) return { response };
      bytes = own(new Uint8Array(await Promise.race([response.arrayBuffer(), aborted])));
    } catch (error) {
      signal?.throwIfAborted();
      return this.#unanswered(error, timeout.signal);
    } finally {
      clearTimeout(timer);
      this.stats.milliseconds += Date.now() - started;
    }
    this.stats.bytes += bytes.byteLength;
    return this.#judged(call, response, bytes);
  }

  /** No answer (or none read whole): a time-out, or an upstream not reached, said for who can fix it. */
  #unanswered(error: unknown, timeout: AbortSignal): Outcome<never> {
    if (timeout.aborted) {
      throw new UpstreamFailure(504, `CKAN did not answer within ${this.#settings.upstreamTimeoutMs / 1000} s.`, {
        cause: error,
      });
    }
    const { host, hostname } = new URL(this.#settings.datastoreSearchUrl);
    if (isLoopback(hostname) && servedLocally) {
      return {
        retry: true,
        error: new UpstreamFailure(
          502,
          `CKAN could not be reached at ${host}: nothing answers there yet (CKAN_BASE_URL points at this machine). Start the local CKAN or the emulator (npm start), then try again.`,
          { cause: error, headers: { "retry-after": "5" } },
        ),
      };
    }
    // A deployed worker cannot reach the machine it was configured on: that is the setting's fault, not CKAN's.
    if (isLoopback(hostname))
      throw configError(
        "CKAN_BASE_URL",
        `points at ${host}, this machine's own address, where no CKAN answers (the demo's emulator is not deployed with the worker)`,
      );
    return {
      retry: true,
      error: new UpstreamFailure(
        502,
        `CKAN could not be reached at ${host} (network error). If this lasts, an operator should check CKAN_BASE_URL.`,
        { cause: error },
      ),
    };
  }

  /** An answer read whole: a redirect refused, a 429 or 5xx to retry, anything else read by the call. */
  #judged<T>(call: Call<T>, response: Response, bytes: Uint8Array): Outcome<T> {
    if (response.status >= 300 && response.status < 400) {
      release(bytes);
      throw redirectRefused(response, call.url, this.redact);
    }
    if (retryable(response.status)) {
      release(bytes);
      const wait = retryAfterMs(response.headers.get("retry-after"));
      const error =
        response.status === 429
          ? new UpstreamFailure(503, "CKAN is rate-limiting this worker; try again later.", {
              headers: { "retry-after": String(Math.ceil((wait ?? 60_000) / 1000)) },
            })
          : new UpstreamFailure(response.status === 504 ? 504 : 502, `CKAN answered HTTP ${response.status}.`);
      return wait === undefined ? { retry: true, error } : { retry: true, error, retryAfterMs: wait };
    }
    return { result: call.read(response, bytes) };
  }

  /**
   * A `datastore_search` answer read from its whole bytes; with `reader`, a success's records are
   * left in the bytes for `copy()` to read when the page's turn comes.
   */
  #readSearch(
    response: Response,
    bytes: Uint8Array,
    reader: RecordsReader | undefined,
    size = bytes.byteLength,
  ): SearchResult {
    const deferred = response.ok && reader !== undefined ? deferRecords(bytes, reader) : undefined;
    let result: SearchResult;
    try {
      // A reader's envelope holds `null` for the records: nothing in it to keep exact.
      result = this.#unwrap(response, () =>
        deferred === undefined ? parseAnswer(bytes) : JSON.parse(deferred.envelope),
      );
    } catch (error) {
      // Refused (no fields, not a success): no records will be copied from these bytes.
      if (deferred !== undefined) release(bytes);
      throw error;
    } finally {
      // Read: its megabytes are freed now rather than at the next collection (see owned-bytes.ts); the
      // view reads as empty from here on. Records still to copy free them once copied.
      if (deferred === undefined) release(bytes);
    }
    if (deferred !== undefined) result.copy = deferred.copy;
    result.responseBytes = size;
    return result;
  }

  #unwrap(response: Response, parse: () => unknown): SearchResult {
    let parsed: unknown;
    try {
      parsed = parse();
    } catch {
      const kind = response.headers.get("content-type")?.split(";")[0] ?? "no content type";
      if (response.status === 404) {
        throw new UpstreamFailure(502, "CKAN_BASE_URL looks wrong: the site has no datastore_search there (HTTP 404).");
      }
      throw new UpstreamFailure(502, `CKAN answered HTTP ${response.status} with ${kind} instead of JSON.`);
    }
    const envelope = parsed !== null && typeof parsed === "object" ? (parsed as Record<string, unknown>) : undefined;
    if (envelope?.success === true && response.ok) {
      const result = envelope.result as Record<string, unknown> | undefined;
      const records = result?.records;
      if (
        result &&
        Array.isArray(result.fields) &&
        (Array.isArray(records) || typeof records === "string" || records == null)
      ) {
        // Only the members this worker reads, each checked for its type.
        const out: SearchResult = {
          fields: redactStrings(result.fields, this.redact) as SearchResult["fields"],
          records: (records ?? []) as SearchResult["records"],
        };
        if (typeof result.total === "number") out.total = result.total;
        if (typeof result.total_was_estimated === "boolean") out.total_was_estimated = result.total_was_estimated;
        if (typeof result.limit === "number") out.limit = result.limit;
        if (result.next_page !== null && typeof result.next_page === "object")
          out.next_page = result.next_page as Record<string, unknown>;
        return out;
      }
      throw new UpstreamFailure(502, "CKAN's answer has no result.fields/result.records.");
    }
    if (envelope === undefined || envelope.error === undefined) {
      throw new UpstreamFailure(502, `CKAN answered HTTP ${response.status} without a usable result.`);
    }
    throw ckanError(response.status, envelope.error, this.redact, this.#settings.apiToken !== undefined);
  }
}
