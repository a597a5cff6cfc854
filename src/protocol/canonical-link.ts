// One spelling of a link, shared by signatures and cache keys (Node runs this file as is, for npm run sign).

/** Parameters the signature never covers: the signature itself, and ignored `_` cache busters. */
const unsigned = (name: string): boolean => name === "sig" || name.startsWith("_");

/**
 * What is signed: the path and the query with parameters sorted (by name, then value), so a link
 * whose parameters were merely reordered still verifies, while any added, removed or edited one
 * (a wider `limit`, a dropped filter, a later `exp`) does not.
 */
export function canonicalLink(pathname: string, params: URLSearchParams): string {
  const pairs = [...params].filter(([name]) => !unsigned(name));
  pairs.sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  const query = pairs.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join("&");
  return `${pathname}?${query}`;
}
