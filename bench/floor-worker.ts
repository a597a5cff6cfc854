// The fetch-and-discard floor, run in the same runtime as the worker (workerd):
//   GET /fetch?resource=R&rows=N&format=lists|csv
// fetches the pages an export of N rows asks for, one after another, reads each body as text and
// keeps nothing. The requests are the worker's own on CKAN 2.10 (offset paging): a first page of
// 1000 lists rows with include_total, then pages of 32000 naming the columns (all but `_id`), without
// the total, as lists (JSON exports) or as CKAN's CSV text (CSV exports). The bench reads this
// process's CPU from /proc around the request.

interface Env {
  CKAN_BASE_URL: string;
  /** JSON object: name -> resource id. */
  RESOURCES: string;
}

const FIRST_PAGE = 1000;
const PAGE_SIZE = 32000;

async function page(env: Env, body: Record<string, unknown>): Promise<{ text: string; ms: number }> {
  const started = Date.now();
  const response = await fetch(`${env.CKAN_BASE_URL}/api/action/datastore_search`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`upstream answered ${response.status}: ${text.slice(0, 200)}`);
  return { text, ms: Date.now() - started };
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname !== "/fetch") return Response.json({ floor: true });
    const rows = Number(url.searchParams.get("rows") ?? 0);
    const format = url.searchParams.get("format") === "csv" ? "csv" : "lists";
    const resourceId = (JSON.parse(env.RESOURCES) as Record<string, string>)[url.searchParams.get("resource") ?? ""];
    if (resourceId === undefined) return Response.json({ error: "unknown resource" }, { status: 400 });
    const started = Date.now();
    const first = await page(env, {
      resource_id: resourceId,
      limit: Math.min(FIRST_PAGE, rows),
      offset: 0,
      sort: "_id",
      records_format: "lists",
      include_total: true,
    });
    // The column names, without parsing the page's records (the worker scans them, the floor does not).
    const at = first.text.indexOf('"fields": ');
    const fields = (JSON.parse(first.text.slice(at + 10, first.text.indexOf("]", at) + 1)) as { id: string }[])
      .map((f) => f.id)
      .filter((id) => id !== "_id");
    let pages = 1;
    let chars = first.text.length;
    for (let seen = Math.min(FIRST_PAGE, rows); seen < rows; seen += PAGE_SIZE) {
      const next = await page(env, {
        resource_id: resourceId,
        limit: Math.min(PAGE_SIZE, rows - seen),
        offset: seen,
        sort: "_id",
        records_format: format,
        fields,
        include_total: false,
      });
      pages++;
      chars += next.text.length;
    }
    return Response.json({ pages, chars, firstPageMs: first.ms, ms: Date.now() - started });
  },
};
