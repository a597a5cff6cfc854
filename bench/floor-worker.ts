// Floors for the benchmark, run in the same runtime as the worker (workerd):
//   GET /fetch?rows=N   fetch the export's pages one after another, read each body, keep nothing
//   GET /load?rows=N    fetch the pages and hold their text (not measured)
//   GET /parse?repeat=R JSON.parse the held text R times: the bench reads this process's CPU from
//                       /proc around the request, because workerd's clocks do not advance while
//                       a request only computes.
// Request bodies are the worker's own (lists, sort by _id, include_total on the first page), minus
// the include_next_page probe.

interface Env {
  CKAN_BASE_URL: string;
  RESOURCE_ID: string;
}

const PAGE_SIZE = 32000;
let held: string[] = [];

async function* pages(env: Env, rows: number): AsyncGenerator<{ text: string; ms: number }> {
  const url = `${env.CKAN_BASE_URL}/api/action/datastore_search`;
  for (let seen = 0; seen < rows; ) {
    const limit = Math.min(PAGE_SIZE, rows - seen);
    const body = { resource_id: env.RESOURCE_ID, limit, sort: "_id", records_format: "lists", offset: seen, ...(seen === 0 ? { include_total: true } : {}) };
    const started = Date.now();
    const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const text = await response.text();
    if (!response.ok) throw new Error(`upstream answered ${response.status}: ${text.slice(0, 200)}`);
    yield { text, ms: Date.now() - started };
    seen += limit;
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    const rows = Number(url.searchParams.get("rows") ?? 0);
    if (url.pathname === "/fetch") {
      const started = Date.now();
      let count = 0;
      let chars = 0;
      let firstPageMs = 0;
      for await (const page of pages(env, rows)) {
        if (count === 0) firstPageMs = page.ms;
        count++;
        chars += page.text.length;
      }
      return Response.json({ pages: count, chars, firstPageMs, ms: Date.now() - started });
    }
    if (url.pathname === "/load") {
      held = [];
      for await (const page of pages(env, rows)) held.push(page.text);
      return Response.json({ pages: held.length });
    }
    if (url.pathname === "/parse") {
      const repeat = Number(url.searchParams.get("repeat") ?? 1);
      let records = 0;
      for (let r = 0; r < repeat; r++) {
        for (const text of held) records += (JSON.parse(text) as { result: { records: unknown[] } }).result.records.length;
      }
      return Response.json({ pages: held.length, records });
    }
    if (url.pathname === "/drop") {
      held = [];
      return Response.json({ dropped: true });
    }
    return Response.json({ floor: true });
  },
};
