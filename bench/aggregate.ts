// An aggregate computed by the worker against the CSV export of the same rows: the "aggregate" part
// of `npm run bench`. `group_by=category,month(created)&measures=count,sum(amount),avg(ratio)` over
// the bench table at 250,000 and 1,000,000 rows (CKAN 2.12, keyset paging, a zero-cost upstream),
// and the CSV export of the 1,000,000 rows; each in a fresh `wrangler dev` under bench:memory's 48 MB
// heap cap (AGG_CAP=<MB> to change it: a larger heap lets garbage not yet collected count as memory),
// its workerd CPU and its isolate's peak heap and ArrayBuffers sampled over the inspector as
// bench:memory samples them.
import { EMULATOR_RESOURCES } from "../emulator/index.ts";
import { startEmulatorServer } from "../emulator/server.ts";
import { download, lineCounter } from "./http.ts";
import { heapSampler, type HeapPeak } from "./inspector.ts";
import type { Upstream } from "./upstream.ts";
import { sample, settle, type Wrangler } from "./workerd.ts";

export const AGGREGATE_QUERY = "group_by=category,month(created)&measures=count,sum(amount),avg(ratio)";

export interface AggregateRow {
  what: "aggregate" | "csv export" | "aggregate, emulator";
  rows: number;
  status: number;
  /** X-Aggregated-By, for the aggregate. */
  by: string;
  /** Lines of the answer (groups and the header, or rows and the header). */
  lines: number;
  cpuSeconds: number;
  seconds: number;
  peak: HeapPeak;
  rssMb: number;
}

const MB = 1024 * 1024;
/** V8's heap cap for the runs, MB: bench:memory's small cap, so the peak is what the isolate holds. */
const HEAP_CAP_MB = Number(process.env.AGG_CAP ?? 48);
const mb = (bytes: number): string => (bytes / MB).toFixed(1);

async function runOnce(
  worker: Wrangler,
  path: string,
  what: AggregateRow["what"],
  rows: number,
): Promise<AggregateRow> {
  const sampler = await heapSampler(worker.inspectorPort);
  try {
    await settle(worker.workerPid);
    const cpuBefore = sample(worker.workerPid).cpuSeconds;
    await sampler.start();
    const lines = lineCounter(false);
    const begun = performance.now();
    const d = await download(`${worker.url}${path}`, {}, () => lines.write);
    const seconds = (performance.now() - begun) / 1000;
    const peak = await sampler.stop();
    await settle(worker.workerPid);
    const after = sample(worker.workerPid);
    const by = String(d.headers["x-aggregated-by"] ?? "");
    const row: AggregateRow = {
      what,
      rows,
      status: d.status,
      by,
      lines: await lines.count(),
      cpuSeconds: after.cpuSeconds - cpuBefore,
      seconds,
      peak,
      rssMb: after.peakMb,
    };
    console.log(
      `  ${what} ${rows} rows: HTTP ${d.status}${by ? ` by ${by}` : ""}, ${row.lines} lines, CPU ${row.cpuSeconds.toFixed(2)} s, ${seconds.toFixed(2)} s, heap ${mb(peak.heap)} MB, ArrayBuffers ${mb(peak.arrayBuffers)} MB`,
    );
    if (d.status !== 200) console.error(`    ${d.tail.slice(0, 300)}`);
    return row;
  } finally {
    sampler.close();
  }
}

/**
 * Each run in a fresh worker (no run inherits another's heap or warm code), best CPU of `repeat`.
 * `alias(rows)` names the bench table with that many rows; `start` gives a worker under V8 flags.
 */
export async function aggregateRuns(
  start: (v8Flags: string) => Promise<Wrangler>,
  up: Upstream,
  alias: (rows: number) => string,
  repeat = 2,
): Promise<AggregateRow[]> {
  up.version = "2.12";
  up.model = undefined;
  const plan: [AggregateRow["what"], number, string][] = [
    ["aggregate", 250_000, `/aggregate.csv?resource=${alias(250_000)}&${AGGREGATE_QUERY}`],
    ["aggregate", 1_000_000, `/aggregate.csv?resource=${alias(1_000_000)}&${AGGREGATE_QUERY}`],
    ["csv export", 1_000_000, `/export.csv?resource=${alias(1_000_000)}`],
  ];
  // Every page shape these ask for, serialised before anything is measured.
  const warm = await start("");
  try {
    for (const [, , path] of plan) await download(`${warm.url}${path}`, {}, () => () => {});
  } finally {
    await warm.stop();
  }
  const rows: AggregateRow[] = [];
  for (const [what, n, path] of plan) {
    let best: AggregateRow | undefined;
    for (let i = 0; i < repeat; i++) {
      const worker = await start(`--max-old-space-size=${HEAP_CAP_MB}`);
      try {
        const row = await runOnce(worker, path, what, n);
        if (best === undefined || row.cpuSeconds < best.cpuSeconds) best = row;
      } finally {
        await worker.stop();
      }
    }
    rows.push(best!);
  }
  return rows;
}

/**
 * The same aggregate over the emulator's 100,000-row sample table (same column names), computed
 * through its datastore_search_sql (PGlite, a real PostgreSQL) and, with SQL search off, by the
 * worker from pages. PGlite loads the table on the first statement naming it: that one is not timed.
 * `startAt(vars)` gives a worker with these settings.
 */
export async function sqlRuns(startAt: (vars: Record<string, string>) => Promise<Wrangler>): Promise<AggregateRow[]> {
  const path = `/aggregate.csv?resource=sample&${AGGREGATE_QUERY}`;
  const rows: AggregateRow[] = [];
  for (const sql of [true, false]) {
    const emulator = await startEmulatorServer({ port: 0, version: "2.12", sql });
    const worker = await startAt({
      CKAN_BASE_URL: emulator.base,
      RESOURCES: JSON.stringify(EMULATOR_RESOURCES),
      UPSTREAM_TIMEOUT_SECONDS: "300",
    });
    try {
      await download(`${worker.url}${path}&_warm=1`, {}, () => () => {});
      rows.push(await runOnce(worker, path, "aggregate, emulator", 100_000));
    } finally {
      await worker.stop();
      await emulator.close();
    }
  }
  return rows;
}

/** The report's section: the runs, and the issue's two targets. */
export function renderAggregate(rows: AggregateRow[]): string {
  const find = (what: AggregateRow["what"], n: number) => rows.find((r) => r.what === what && r.rows === n);
  const table = [
    "| run | rows | HTTP | computed by | lines | CPU s | wall s | peak heap MB | peak ArrayBuffers MB | peak heap + ArrayBuffers MB | workerd peak RSS MB |",
    "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.what} | ${r.rows.toLocaleString("en-US")} | ${r.status} | ${r.by || "-"} | ${r.lines} | ${r.cpuSeconds.toFixed(2)} | ${r.seconds.toFixed(2)} | ${mb(r.peak.heap)} | ${mb(r.peak.arrayBuffers)} | ${mb(r.peak.total)} | ${r.rssMb.toFixed(0)} |`,
    ),
  ];
  const quarter = find("aggregate", 250_000);
  const whole = find("aggregate", 1_000_000);
  const csv = find("csv export", 1_000_000);
  const notes: string[] = [];
  if (whole !== undefined && csv !== undefined) {
    const ratio = whole.cpuSeconds / csv.cpuSeconds;
    notes.push(
      `- CPU: the aggregate of 1,000,000 rows took ${whole.cpuSeconds.toFixed(2)} s, the CSV export of the same rows ${csv.cpuSeconds.toFixed(2)} s: ${(ratio * 100).toFixed(0)} % of it (target: at most 50 %) ${ratio <= 0.5 ? "met" : "NOT met"}.`,
    );
  }
  if (quarter !== undefined && whole !== undefined) {
    const growth = whole.peak.total - quarter.peak.total;
    notes.push(
      `- Memory: peak heap + ArrayBuffers ${mb(quarter.peak.total)} MB at 250,000 rows, ${mb(whole.peak.total)} MB at 1,000,000 (${growth >= 0 ? "+" : ""}${mb(growth)} MB for four times the rows; target: flat, within 8 MB) ${Math.abs(growth) <= 8 * MB ? "met" : "NOT met"}.`,
    );
  }
  return [
    "## Aggregate in the worker against the CSV export",
    "",
    `\`/aggregate.csv?${AGGREGATE_QUERY}\` over the bench table (CKAN 2.12, zero-cost upstream, keyset paging, ${HEAP_CAP_MB} MB heap cap), each run in a fresh \`wrangler dev\`, best CPU of two; memory sampled over the inspector as bench:memory samples it.`,
    "",
    ...table,
    "",
    ...notes,
    "",
    "Rows marked \"emulator\" are the same aggregate over the emulator's 100,000-row sample table: through its `datastore_search_sql` (PGlite) in one request (`ckan-sql`), and with SQL search off from pages (`worker`). Their wall time includes the emulator's own work in the bench's process.",
    "",
  ].join("\n");
}
