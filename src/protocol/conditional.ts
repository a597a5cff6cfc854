// Conditional requests (RFC 9110, section 13), for every sink: exports read whole, the edge cache,
// snapshot files from R2, discovery answers. One reading of the validators, one 304, one 412.

/** Lower-case hex of bytes (digests in ETags and R2 metadata). */
export const hex = (bytes: ArrayBuffer | Uint8Array): string =>
  [...(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");

/** A strong ETag: the content's own SHA-256, identical for identical bytes whoever computed it. */
export const etagOf = (sha256: ArrayBuffer): string => `"${hex(new Uint8Array(sha256).slice(0, 16))}"`;

export const contentEtag = async (bytes: Uint8Array<ArrayBuffer>): Promise<string> =>
  etagOf(await crypto.subtle.digest("SHA-256", bytes));

/** RFC 9110 weak comparison, enough for If-None-Match: a list, `*`, or W/-prefixed tags. */
function weakMatch(header: string, etag: string | null): boolean {
  if (header.trim() === "*") return etag !== null;
  if (etag === null) return false;
  const bare = etag.replace(/^W\//, "");
  return header.split(",").some((tag) => tag.trim().replace(/^W\//, "") === bare);
}

/** Strong comparison, for If-Match and If-Range: a weak tag never matches. */
function strongMatch(header: string, etag: string | null): boolean {
  if (header.trim() === "*") return etag !== null;
  if (etag === null || etag.startsWith("W/")) return false;
  return header.split(",").some((tag) => tag.trim() === etag);
}

/** HTTP dates have whole seconds: compare what the client could have been sent. */
const seconds = (date: Date): number => Math.floor(date.getTime() / 1000);

function dateHeader(value: string | null): number | undefined {
  if (value === null) return undefined;
  const time = Date.parse(value);
  return Number.isNaN(time) ? undefined : Math.floor(time / 1000);
}

/** What a representation is known by: its ETag and, when it has one, when it last changed. */
export interface Validators {
  etag: string | null;
  lastModified?: Date;
}

/**
 * The outcome of a request's preconditions against the current representation, evaluated in
 * RFC 9110's order (13.2.2): If-Match, else If-Unmodified-Since (412 when false); then
 * If-None-Match, else If-Modified-Since (304 for GET and HEAD when false).
 */
export function preconditions(request: Request, current: Validators): "proceed" | "not-modified" | "failed" {
  const h = request.headers;
  const ifMatch = h.get("if-match");
  if (ifMatch !== null) {
    if (!strongMatch(ifMatch, current.etag)) return "failed";
  } else {
    const since = dateHeader(h.get("if-unmodified-since"));
    if (since !== undefined && current.lastModified !== undefined && seconds(current.lastModified) > since)
      return "failed";
  }
  const readOnly = request.method === "GET" || request.method === "HEAD";
  const ifNoneMatch = h.get("if-none-match");
  if (ifNoneMatch !== null) {
    if (weakMatch(ifNoneMatch, current.etag)) return readOnly ? "not-modified" : "failed";
  } else if (readOnly) {
    const since = dateHeader(h.get("if-modified-since"));
    if (since !== undefined && current.lastModified !== undefined && seconds(current.lastModified) <= since)
      return "not-modified";
  }
  return "proceed";
}

/** If-Range: a Range applies only while the file is still the one the client has part of. */
export function ifRangeHolds(request: Request, current: Validators): boolean {
  const value = request.headers.get("if-range")?.trim();
  if (value === undefined) return true;
  if (value.startsWith('"') || value.startsWith("W/")) return strongMatch(value, current.etag);
  const date = dateHeader(value);
  return date !== undefined && current.lastModified !== undefined && seconds(current.lastModified) === date;
}

const NOT_MODIFIED_HEADERS = [
  "etag",
  "last-modified",
  "cache-control",
  "content-type",
  "content-disposition",
  "x-total-count",
  "x-cache",
  "age",
  "vary",
  "accept-ranges",
];

/**
 * The answer the preconditions call for, carrying the validators and caching headers of the full
 * response (a 304) or its validators (a 412); undefined when the request should get the body.
 */
export function conditionalAnswer(request: Request, headers: Headers): Response | undefined {
  const lastModified = dateHeader(headers.get("last-modified"));
  const verdict = preconditions(request, {
    etag: headers.get("etag"),
    ...(lastModified === undefined ? {} : { lastModified: new Date(lastModified * 1000) }),
  });
  if (verdict === "proceed") return undefined;
  const out = new Headers();
  for (const name of verdict === "not-modified" ? NOT_MODIFIED_HEADERS : ["etag", "last-modified"]) {
    const value = headers.get(name);
    if (value !== null) out.set(name, value);
  }
  return new Response(null, { status: verdict === "not-modified" ? 304 : 412, headers: out });
}
