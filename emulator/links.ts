// CKAN 2.10's `_links`: the request's own path (from `/api/` on, mount prefix and language dropped)
// and query string with `offset` replaced. `next` is there even past the end; `prev` only when
// offset - limit > 0, so the page right after the first has none.

export interface Links {
  start: string;
  next: string;
  prev?: string;
}

export function pageLinks(path: string, query: URLSearchParams, limit: number, offset: number): Links {
  const withOffset = (value: number | undefined): string => {
    const params = new URLSearchParams(query);
    if (value === undefined) params.delete("offset");
    else params.set("offset", String(value));
    const search = params.toString();
    return search === "" ? path : `${path}?${search}`;
  };
  const links: Links = { start: withOffset(undefined), next: withOffset(offset + limit) };
  if (offset - limit > 0) links.prev = withOffset(offset - limit);
  return links;
}
