// The cost model's calibration and self-check (bench/ckan/cost.ts), per CKAN version:
//   fit     the constants fitted on the real timings (bench/ckan/real-timings.json), and how far the
//           fitted costs are from each real timing (root mean square, worst)
//   replay  real requests of the timing set sent to the bench upstream over loopback, one at a time
//           (200,000 rows of the 12-column table): csv pages of 32000 rows at offsets 0 and 168,000
//           with include_total, and the dump; the real time, the model's, and the measured one
//   cores   the CKAN capacity each measured export of issue 28 implies (see cost.ts)
// `node bench/calibrate.ts` runs it alone.
import { request } from "node:http";
import { fileURLToPath } from "node:url";
import {
  costSeconds,
  DUMP_PAGE_ROWS,
  dumpSeconds,
  fit,
  isSearch,
  REAL_ROWS,
  realTimings,
  VERSIONS,
  workOf,
  type CostModel,
  type Version,
} from "./ckan/cost.ts";
import { BASE } from "./ckan/tables.ts";
import { startUpstream } from "./upstream.ts";

export interface CheckRow {
  version: Version;
  name: string;
  /** The real CKAN's figure, s. */
  ckanS: number;
  /** What the model's constants add up to for the same requests, s. */
  modelS: number;
  /** Wall time of the same requests against the bench upstream, s. */
  measuredS: number;
}

const CHECK_ID = "ca1b0000-0000-4000-8000-000000000200";

/** Reads an answer to its end with node:http (lighter than fetch), keeping nothing. */
function call(url: string, body?: Record<string, unknown>): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: body ? "POST" : "GET", headers: body ? { "content-type": "application/json" } : {} },
      (res) => {
        res.on("data", () => {});
        res.on("end", () =>
          res.statusCode === 200 ? resolve() : reject(new Error(`self-check: upstream answered ${res.statusCode}`)),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

const REPLAYED = [
  { limit: DUMP_PAGE_ROWS, offset: 0 },
  { limit: DUMP_PAGE_ROWS, offset: 168_000 },
];

export async function selfCheck(models: CostModel[] = VERSIONS.map((v) => fit(v))): Promise<CheckRow[]> {
  const timings = realTimings();
  const rows: CheckRow[] = [];
  const up = await startUpstream({ resources: [{ id: CHECK_ID, shape: BASE, rows: REAL_ROWS }] });
  try {
    const all = BASE.fields.map((_, i) => i);
    for (const encoding of ["csv", "dump"] as const) up.store.want(BASE, encoding, all, REAL_ROWS);
    up.store.prepareSeen();
    const timed = async (run: () => Promise<void>): Promise<number> => {
      const begun = performance.now();
      await run();
      return (performance.now() - begun) / 1000;
    };
    for (const model of models) {
      up.version = model.version;
      up.model = model;
      await call(`${up.url}/api/action/datastore_search`, { resource_id: CHECK_ID, limit: 1, records_format: "csv" });
      for (const { limit, offset } of REPLAYED) {
        const real = timings.find(
          (t) =>
            isSearch(t) &&
            t.ckan === model.version &&
            t.records_format === "csv" &&
            "offset" in t &&
            t.offset === offset &&
            t.limit === limit &&
            t.include_total,
        );
        if (real === undefined || !isSearch(real)) continue;
        const measuredS = await timed(() =>
          call(`${up.url}/api/action/datastore_search`, {
            resource_id: CHECK_ID,
            limit,
            offset,
            records_format: "csv",
            sort: "_id",
          }),
        );
        rows.push({
          version: model.version,
          name: `csv, ${limit} rows at offset ${offset.toLocaleString("en-US")}, include_total`,
          ckanS: real.median_s,
          modelS: costSeconds(model, workOf(real)),
          measuredS,
        });
      }
      const dump = timings.find((t) => t.ckan === model.version && "dump_s" in t);
      const measuredS = await timed(() => call(`${up.url}/datastore/dump/${CHECK_ID}`));
      rows.push({
        version: model.version,
        name: "/datastore/dump CSV",
        ckanS: dump && "dump_s" in dump ? dump.dump_s : Number.NaN,
        modelS: dumpSeconds(model, REAL_ROWS),
        measuredS,
      });
    }
  } finally {
    await up.close();
  }
  return rows;
}

export function describeModel(model: CostModel): string {
  const r = model.rowUs;
  return `CKAN ${model.version}: fixed ${model.fixedMs.toFixed(1)} ms a request; per row served ${r.csv.toFixed(2)} µs csv (lists charged alike), ${r.objects.toFixed(2)} µs objects, ${model.dumpRowUs.toFixed(2)} µs the dump's; offset ${model.skipUs.toFixed(3)} µs a skipped row; a listed \`_id\` ${model.listUs.toFixed(1)} µs (LIST-FILTER.md); include_total ${model.countUs === 0 ? "nothing measurable (a cached total)" : `${((model.countUs * REAL_ROWS) / 1000).toFixed(1)} ms for 200,000 rows (${model.countUs.toFixed(3)} µs a matching row)`}; dump pages by ${model.dumpByOffset ? "offset" : "keyset"}; fit within ${model.fitRmsMs.toFixed(1)} ms rms (worst ${model.fitWorstMs.toFixed(1)} ms) of its real timings`;
}

/** The exports of issue 28 measured against real CKAN: pages sized to answer bytes, CSV of the whole table. */
const MEASURED_EXPORTS: { version: Version; pageMiB: number; ratios: number[] }[] = [
  { version: "2.12", pageMiB: 2, ratios: [0.96, 1.05] },
  { version: "2.11", pageMiB: 2, ratios: [1.23, 1.47] },
  { version: "2.10", pageMiB: 2, ratios: [1.25, 1.4] },
  { version: "2.12", pageMiB: 4, ratios: [0.78, 0.83] },
  { version: "2.11", pageMiB: 4, ratios: [0.85, 0.9] },
  { version: "2.10", pageMiB: 4, ratios: [0.74] },
];
/** Bytes a row of the real table costs in a csv page (10,068,584 bytes for 32,000 rows). */
const REAL_CSV_ROW_BYTES = 314.6;

export interface CoresRow {
  version: Version;
  pageMiB: number;
  pages: number;
  workS: number;
  ratio: number;
  cores: number;
}

/**
 * CKAN's capacity each measured export implies: the work of its page plan (a first page of 1000 rows
 * with include_total, then pages without) done `cores` requests' worth at once, plus the first page
 * alone, took `ratio` times the dump.
 */
export function impliedCores(models: CostModel[]): CoresRow[] {
  return MEASURED_EXPORTS.flatMap(({ version, pageMiB, ratios }) => {
    const model = models.find((m) => m.version === version)!;
    const per = Math.floor((pageMiB * 1024 * 1024) / REAL_CSV_ROW_BYTES);
    const first = costSeconds(model, { format: "lists", rows: 1000, skipped: 0, listed: 0, counted: REAL_ROWS });
    let work = 0;
    let pages = 0;
    for (let at = 1000; at < REAL_ROWS; at += per, pages++)
      work += costSeconds(model, {
        format: "csv",
        rows: Math.min(per, REAL_ROWS - at),
        skipped: version === "2.12" ? 0 : at,
        listed: 0,
        counted: undefined,
      });
    const dump = dumpSeconds(model, REAL_ROWS);
    return ratios.map((ratio) => ({
      version,
      pageMiB,
      pages: pages + 1,
      workS: work + first,
      ratio,
      cores: work / (ratio * dump - first),
    }));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const models = VERSIONS.map((v) => fit(v));
  for (const model of models) console.log(describeModel(model));
  for (const row of impliedCores(models))
    console.log(
      `CKAN ${row.version}, ${row.pageMiB} MiB pages (${row.pages}), ${row.ratio}x the dump: ${row.cores.toFixed(2)} requests' worth at once`,
    );
  for (const row of await selfCheck(models))
    console.log(
      `CKAN ${row.version} ${row.name}: real ${row.ckanS.toFixed(3)} s, model ${row.modelS.toFixed(3)} s, bench upstream ${row.measuredS.toFixed(3)} s`,
    );
}
