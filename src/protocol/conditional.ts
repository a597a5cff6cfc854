/** Lower-case hex of bytes (digests in ETags and R2 metadata). */
export const hex = (bytes: ArrayBuffer | Uint8Array): string =>
  [...(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");

/** A strong ETag: the content's own SHA-256, identical for identical bytes whoever computed it. */
export const etagOf = (sha256: ArrayBuffer): string => `"${hex(new Uint8Array(sha256).slice(0, 16))}"`;

export const contentEtag = async (bytes: Uint8Array<ArrayBuffer>): Promise<string> => etagOf(await crypto.subtle.digest("SHA-256", bytes));

/** RFC 9110 weak comparison is enough for 304s: a list, `*`, or W/-prefixed tags. */
export function etagMatches(ifNoneMatch: string | null, etag: string | null): boolean {
  if (ifNoneMatch === null || etag === null) return false;
  if (ifNoneMatch.trim() === "*") return true;
  const bare = etag.replace(/^W\//, "");
  return ifNoneMatch.split(",").some((tag) => tag.trim().replace(/^W\//, "") === bare);
}

/** A 304 carrying the validators and caching headers of the full response. */
export function notModified(headers: Headers): Response {
  const out = new Headers();
  for (const name of ["etag", "cache-control", "content-type", "content-disposition", "x-total-count", "x-cache", "last-modified"]) {
    const value = headers.get(name);
    if (value !== null) out.set(name, value);
  }
  return new Response(null, { status: 304, headers: out });
}
