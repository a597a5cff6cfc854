// The cost model's self-check: replays the three runs it is calibrated on (bench/ckan/cost.ts)
// against the bench upstream over loopback, 200,000 rows of the 12-column table, as CKAN 2.12:
//   keyset  datastore_search, lists, 32000 a page, one at a time, following next_page
//   offset  datastore_search, objects, 32000 a page, one at a time, by offset
//   dump    /datastore/dump/<id> as CSV
// Both paging runs send CKAN's defaults (include_total true). `node bench/calibrate.ts` runs it alone.
import { request } from "node:http";
import { fileURLToPath } from "node:url";
import { calibrate, costSeconds, MEASURED, type CostModel } from "./ckan/cost.ts";
import { BASE } from "./ckan/tables.ts";
import { startUpstream } from "./upstream.ts";

export interface CheckRow {
  name: string;
  /** The real CKAN's figure, s. */
  ckanS: number;
  /** What the model's constants add up to for the same requests, s. */
  modelS: number;
  /** Wall time of the same requests against the bench upstream, s. */
  measuredS: number;
}

const CHECK_ID = "ca1b0000-0000-4000-8000-000000000200";

/** Reads an answer to its end with node:http (lighter than fetch), keeping only its last bytes. */
function call(url: string, body?: Record<string, unknown>): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: body ? "POST" : "GET", headers: body ? { "content-type": "application/json" } : {} }, (res) => {
      let tail: Buffer = Buffer.alloc(0);
      res.on("data", (chunk: Buffer) => (tail = chunk.length >= 200 ? chunk.subarray(-200) : Buffer.concat([tail, chunk]).subarray(-200)));
      res.on("end", () => (res.statusCode === 200 ? resolve(tail) : reject(new Error(`self-check: upstream answered ${res.statusCode}: ${tail.toString()}`))));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}
const post = (url: string, body: Record<string, unknown>): Promise<Buffer> => call(`${url}/api/action/datastore_search`, body);

/** next_page sits at the end of the answer: read it from there, as parsing 5 MB would add time. */
function nextPage(tail: Buffer): Record<string, unknown> | undefined {
  const match = /"next_page": (\{.*\})\}\}$/.exec(tail.toString());
  return match ? (JSON.parse(match[1]!) as Record<string, unknown>) : undefined;
}

export async function selfCheck(model: CostModel = calibrate()): Promise<CheckRow[]> {
  const rows = MEASURED.rows;
  const size = MEASURED.pageRows;
  const up = await startUpstream({ resources: [{ id: CHECK_ID, shape: BASE, rows }], version: "2.12", model });
  try {
    const all = BASE.fields.map((_, i) => i);
    for (const encoding of ["lists", "objects", "dump"] as const) up.store.want(BASE, encoding, all, rows);
    up.store.prepareSeen();
    const pages = Math.ceil(rows / size);
    const pageRows = (p: number): number => Math.min(size, rows - p * size);
    const timed = async (run: () => Promise<void>): Promise<number> => {
      const begun = performance.now();
      await run();
      return (performance.now() - begun) / 1000;
    };
    // Warm the connection and the code paths, unmeasured.
    await post(up.url, { resource_id: CHECK_ID, limit: 1, records_format: "lists" });

    const keyset = await timed(async () => {
      let filters: Record<string, unknown> | undefined;
      for (;;) {
        const page = await post(up.url, { resource_id: CHECK_ID, limit: size, records_format: "lists", sort: "_id", include_next_page: true, ...(filters ? { filters } : {}) });
        const next = nextPage(page);
        if (next === undefined) break;
        filters = next;
      }
    });
    const offset = await timed(async () => {
      for (let at = 0; at < rows; at += size) await post(up.url, { resource_id: CHECK_ID, limit: size, offset: at, sort: "_id" });
    });
    const dump = await timed(async () => {
      await call(`${up.url}/datastore/dump/${CHECK_ID}`);
    });

    let keysetModel = 0;
    let offsetModel = 0;
    let dumpModel = 0;
    for (let p = 0; p < pages; p++) {
      keysetModel += costSeconds(model, { format: "lists", rows: pageRows(p), skipped: 0, counted: rows - p * size, unfiltered: p === 0 });
      offsetModel += costSeconds(model, { format: "objects", rows: pageRows(p), skipped: p * size, counted: rows, unfiltered: true });
      dumpModel += costSeconds(model, { format: "csv", rows: pageRows(p), skipped: 0, counted: undefined, unfiltered: false });
    }
    return [
      { name: "datastore_search lists, keyset, 32000 a page", ckanS: MEASURED.keysetListsS, modelS: keysetModel, measuredS: keyset },
      { name: "datastore_search objects, offset, 32000 a page", ckanS: MEASURED.offsetObjectsS, modelS: offsetModel, measuredS: offset },
      { name: "/datastore/dump CSV", ckanS: MEASURED.dumpS, modelS: dumpModel, measuredS: dump },
    ];
  } finally {
    await up.close();
  }
}

export function describeModel(model: CostModel): string {
  const r = model.rowUs;
  return `fixed ${model.fixedMs} ms a request; per row served ${r.lists.toFixed(2)} µs lists, ${r.objects.toFixed(2)} µs objects, ${r.csv.toFixed(2)} µs csv (and the dump); count(*) ${model.countUs.toFixed(3)} µs a matching row${model.cachedUnfilteredCount ? " (none for an unfiltered table, as CKAN 2.12 caches that total)" : ""}; offset ${model.skipUs.toFixed(3)} µs a skipped row; ${model.workers} workers`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const model = calibrate();
  console.log(`cost model: ${describeModel(model)}`);
  for (const row of await selfCheck(model)) {
    console.log(`${row.name}: CKAN ${row.ckanS.toFixed(2)} s, model ${row.modelS.toFixed(2)} s, bench upstream ${row.measuredS.toFixed(2)} s`);
  }
}
