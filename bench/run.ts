// `npm run bench`: the worker's exports against a synthetic CKAN (bench/upstream.ts), in three parts:
//   check  the cost model's self-check: it replays the runs it is calibrated on (bench/calibrate.ts)
//   cpu    a zero-cost upstream: the worker's CPU beside the fetch-and-discard floor, and its peak RSS
//          from a quarter of the rows to all of them, in fresh processes; a second table shape (text[],
//          json, formula-like texts); the edge cache; a 1,000,000-row JSON export under a 48 MB heap
//   cost   the upstream costs what CKAN costs: the worker's wall time next to the upstream's own dump
//          of the same rows, as CKAN 2.12 (keyset), 2.11 and 2.10 (offset), at the CPU the real CKAN
//          had (bench/ckan/cost.ts) and with a core per gunicorn worker; then 150 ms added to every
//          page, against what fetching the same pages one at a time would add
// Options are environment variables (README, "Benchmark"). The default run writes bench/RESULTS.md; a
// subset writes bench/tmp/RESULTS.partial.md. Loopback only; every child is killed at the end.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { impliedCores, selfCheck, type CheckRow } from "./calibrate.ts";
import { CKAN_CORES, fit, VERSIONS } from "./ckan/cost.ts";
import { BASE, RICH } from "./ckan/tables.ts";
import { csvRecordCounter, download, getJson, lineCounter } from "./http.ts";
import {
  render,
  sectionOf,
  SNAPSHOT_SECTION,
  withSection,
  type DumpResult,
  type ExportResult,
  type FetchFloor,
  type Format,
  type Machine,
  type Report,
} from "./report.ts";
import { memoryDefaults, memoryRuns, type MemoryRow } from "./memory.ts";
import { aggregateRuns, renderAggregate, sqlRuns, type AggregateRow } from "./aggregate.ts";
import { evaluateTargets } from "./targets.ts";
import { startUpstream, type Resource, type Upstream, type Version } from "./upstream.ts";
import {
  benchVars,
  buildWorker,
  killAllNow,
  sample,
  settle,
  startWrangler,
  watchOtherLoad,
  type Wrangler,
} from "./workerd.ts";

const list = (name: string): string[] | undefined =>
  process.env[name]
    ?.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
const options = {
  only: new Set(list("BENCH_ONLY") ?? ["check", "cpu", "cost", "memory", "aggregate"]),
  modes: (list("BENCH_MODES") ?? [...VERSIONS]) as Version[],
  /** CKAN's CPU, in requests served at full speed at once: as measured, and a core per worker. */
  cores: (list("BENCH_CKAN_CORES") ?? [String(CKAN_CORES), "3"]).map(Number),
  latencyMs: Number(process.env.BENCH_LATENCY_MS ?? 150),
  costRows: (list("BENCH_ROWS") ?? ["200000", "1000000"]).map(Number),
  formats: (list("BENCH_FORMATS") ?? ["csv", "json"]) as Format[],
  workers: Number(process.env.BENCH_CKAN_WORKERS ?? 3),
  repeat: Number(process.env.BENCH_REPEAT ?? 3),
  /** Runs of each cost case of at most SHORT_COST_ROWS rows (the median reported): a second's run spreads 10-20% here. */
  costRepeat: Number(process.env.BENCH_COST_REPEAT ?? 3),
  cpuMode: (process.env.BENCH_CPU_MODE ?? "2.10") as Version,
  extra: process.env.BENCH_EXTRA === "1",
};
const SUBSET_VARS = [
  "BENCH_ONLY",
  "BENCH_MODES",
  "BENCH_ROWS",
  "BENCH_FORMATS",
  "BENCH_CKAN_WORKERS",
  "BENCH_CKAN_CORES",
  "BENCH_LATENCY_MS",
  "BENCH_REPEAT",
  "BENCH_COST_REPEAT",
  "BENCH_CPU_MODE",
  "BENCH_V8_FLAGS",
  "BENCH_TIMELINE",
];
const subset = SUBSET_VARS.filter((name) => process.env[name] !== undefined);

const MILLION = 1_000_000;
const QUARTER = MILLION / 4;
const RICH_ROWS = 500_000;
const CACHE_ROWS = 100_000;
const WARM_ROWS = 70_000;
/**
 * Production isolates stop at 128 MB; wrangler dev sets no limit, so V8 grows its heap instead of
 * collecting and peak RSS would measure V8's heap sizing, not what the worker keeps. Export workers
 * run with this cap unless a case says otherwise. BENCH_V8_FLAGS overrides it.
 */
const HEAP_CAP = process.env.BENCH_V8_FLAGS ?? "--max-old-space-size=128";
const SMALL_HEAP = "--max-old-space-size=48";
const root = fileURLToPath(new URL("..", import.meta.url));
const scratch = join(root, "bench", "tmp", `run-${process.pid}`);
const started = performance.now();

const id = (n: number): string => `be4c0000-0000-4000-8000-${String(n).padStart(12, "0")}`;
/** The 12-column table at each size the runs use (all one table's rows: sizes share serialised pages), and the rich one. */
const baseAlias = (rows: number): string => (rows === MILLION ? "base" : `base-${rows}`);
const baseSizes = [...new Set([MILLION, QUARTER, ...options.costRows])];
const resources: (Resource & { alias: string })[] = [
  ...baseSizes.map((rows) => ({ alias: baseAlias(rows), id: id(rows), shape: BASE, rows })),
  { alias: "rich", id: "51c40000-0000-4000-8000-000000000001", shape: RICH, rows: RICH_ROWS },
];
const aliasIds: Record<string, string> = Object.fromEntries(resources.map((r) => [r.alias, r.id]));
const aliases = JSON.stringify(aliasIds);

/** Module-level only so the final clean-up can close it. */
let upstream: Upstream | undefined;
let serial = 0;
let built: { bundle: string; config: string } | undefined;

/**
 * A fresh wrangler dev running the bench's build of the export worker (or the floor worker). The edge
 * cache is off unless a case is about it: wrangler dev's Cache API is Miniflare's, JavaScript in the
 * same workerd process, and filling it costs about 0.8 s of that process's CPU per 40 MB (measured:
 * a 250,000-row CSV, 0.36 s of CPU with the cache off, 1.2 s with it on), work Cloudflare's cache
 * does outside the worker. It would also be charged to every export under CACHE_MAX_BYTES and not to
 * larger ones. On `*.workers.dev` there is no cache at all.
 */
function freshWorker(
  up: Upstream,
  v8Flags: string,
  floor = false,
  cache = false,
  at: Record<string, string> = {},
): Promise<Wrangler> {
  const persistTo = join(scratch, `state-${++serial}`);
  mkdirSync(persistTo, { recursive: true });
  if (floor)
    return startWrangler({
      root,
      config: "bench/wrangler.floor.toml",
      vars: { CKAN_BASE_URL: up.url, RESOURCES: aliases },
      persistTo,
    });
  built ??= buildWorker(root, scratch);
  const vars = benchVars(up.url, aliasIds, { CACHE_TTL_SECONDS: cache ? "300" : "0", ...at });
  return startWrangler({ root, ...built, vars, persistTo, v8Flags });
}

/** The worker's own log line for the export that just ran, if it printed one. */
function workerUpstreamMs(worker: Wrangler, from: number): number | undefined {
  for (const line of worker.output.slice(from).reverse()) {
    const at = line.indexOf("{");
    if (at < 0 || !line.includes("upstream_ms")) continue;
    try {
      const value = (JSON.parse(line.slice(at)) as { upstream_ms?: unknown }).upstream_ms;
      if (typeof value === "number") return value;
    } catch {
      // Not a JSON line after all.
    }
  }
  return undefined;
}

interface Case {
  table: "base" | "rich";
  format: Format;
  rows: number;
  /** Export the whole table of this alias instead of `limit` rows of the table. */
  alias?: string;
  gzip?: boolean;
  /** Which fresh process, for RSS growth within one process. */
  proc: string;
  heap: string;
}

async function measure(
  up: Upstream,
  worker: Wrangler,
  c: Case,
  run: "cold" | "cached",
  baselineMb: number,
): Promise<ExportResult> {
  up.resetStats();
  const logFrom = worker.output.length;
  const before = sample(worker.workerPid);
  const proxyBefore = sample(worker.proxyPid);
  const query = c.alias !== undefined ? `resource=${c.alias}` : `resource=${c.table}&limit=${c.rows}`;
  let lines = lineCounter(false);
  const begun = performance.now();
  const d = await download(
    `${worker.url}/export.${c.format}?${query}`,
    c.gzip ? { "accept-encoding": "gzip" } : {},
    (response) => {
      const zipped = response.headers["content-encoding"] === "gzip";
      lines = c.table === "rich" && c.format === "csv" && !zipped ? csvRecordCounter() : lineCounter(zipped);
      return lines.write;
    },
  );
  await settle(worker.workerPid);
  const after = sample(worker.workerPid);
  const framing = c.format === "csv" ? 1 : 2; // CSV: the header line; JSON: the "[" and "]" lines
  const s = up.stats;
  const result: ExportResult = {
    table: c.table,
    format: c.format,
    rows: c.rows,
    mode: up.version,
    cost: up.model ? "ckan" : "zero",
    run,
    heap: c.heap,
    gzip: c.gzip === true,
    proc: c.proc,
    status: d.status,
    wallMs: d.wallMs,
    ttfbMs: d.ttfbMs,
    bytes: d.bytes,
    rowsSeen: Math.max(0, (await lines.count()) - framing),
    upstreamRequests: s.requests,
    upstreamBytes: s.bytes,
    upstreamGenerated: s.generated,
    recordsFormats: { ...s.formats },
    requestLog: [...s.log],
    upstreamModelS: s.modelSeconds,
    upstreamPeak: s.peakRequests,
    upstreamQueuedS: s.queuedSeconds,
    upstreamLateMs: s.lateMs,
    upstreamParts: { ...s.modelParts },
    upstreamBusyS: s.busySeconds,
    upstreamFullS: s.fullSeconds,
    ckanFirstS: s.firstWorkAt === undefined ? 0 : (s.firstWorkAt - begun) / 1000,
    ckanAfterS: s.lastWorkAt === undefined ? 0 : Math.max(0, (begun + d.wallMs - s.lastWorkAt) / 1000),
    cores: up.model?.cores ?? 0,
    latencyMs: up.model?.latencyMs ?? 0,
    peakMb: after.peakMb,
    baselineMb,
    cpuSeconds: after.cpuSeconds - before.cpuSeconds,
    proxyCpuSeconds: sample(worker.proxyPid).cpuSeconds - proxyBefore.cpuSeconds,
    xCache: String(d.headers["x-cache"] ?? "absent"),
    contentEncoding: String(d.headers["content-encoding"] ?? "identity"),
  };
  const cacheNote = d.headers["x-cache-note"];
  if (typeof cacheNote === "string") result.cacheNote = cacheNote;
  const upstreamMs = workerUpstreamMs(worker, logFrom);
  if (upstreamMs !== undefined) result.workerUpstreamMs = upstreamMs;
  const costly = up.model
    ? ` (${up.model.cores} cores${up.model.latencyMs ? `, +${up.model.latencyMs} ms a page` : ""})`
    : "";
  const label = `${c.table} ${c.format}${c.gzip ? "+gzip" : ""} ${c.rows} rows, CKAN ${up.version}, ${result.cost} cost${costly}, heap ${c.heap}, ${run}`;
  if (d.status !== 200 || d.cutOff !== undefined) {
    // Keep the worker's last words: they say why (paths of this machine are cut out).
    const said = worker.output
      .slice(logFrom)
      .map((l) =>
        l
          .replace(/\x1b\[[0-9;]*m/g, "")
          .split(root)
          .join(""),
      )
      .filter((l) => !l.startsWith("[wrangler:info]") && !l.includes("@0x")) // stack frames name files of this machine
      .slice(-4)
      .map((l) => l.slice(0, 240));
    const gone = Number.isNaN(after.cpuSeconds) ? "the worker's workerd process is gone; " : "";
    result.error = `${gone}${d.cutOff ? `cut off after ${d.bytes} bytes (${d.cutOff})` : `HTTP ${d.status}: ${d.tail.slice(0, 200)}`}${said.length ? `; worker output: ${said.join(" | ")}` : ""}`;
    console.error(`  ${label}: FAILED: ${result.error}`);
  } else if (result.rowsSeen !== c.rows) {
    console.error(`  warning: ${label} has ${result.rowsSeen} rows; it ends: ${JSON.stringify(d.tail.slice(-120))}`);
  }
  const e = result;
  console.log(
    `  ${label}: ${(e.wallMs / 1000).toFixed(2)} s, TTFB ${e.ttfbMs.toFixed(0)} ms, ${e.upstreamRequests} upstream req, CPU ${e.cpuSeconds.toFixed(2)} s, peak RSS ${e.peakMb.toFixed(0)} MB, X-Cache ${e.xCache}`,
  );
  return result;
}

/** One fresh worker process running `cases` in order, each cold (and the first cached too, if asked). */
async function inProcess(
  up: Upstream,
  heap: string,
  cases: Omit<Case, "heap">[],
  cachedRepeat = false,
): Promise<ExportResult[]> {
  const worker = await freshWorker(up, heap === "none" ? "" : heap, false, cachedRepeat);
  const results: ExportResult[] = [];
  const label = heap === "none" ? "none" : `${/\d+/.exec(heap)?.[0] ?? heap} MB`;
  try {
    await settle(worker.workerPid);
    const baselineMb = sample(worker.workerPid).rssMb;
    for (const c of cases) {
      results.push(await measure(up, worker, { ...c, heap: label }, "cold", baselineMb));
      if (cachedRepeat) results.push(await measure(up, worker, { ...c, heap: label }, "cached", baselineMb));
    }
  } finally {
    await worker.stop();
  }
  return results;
}

/** Every shape of page the runs will ask for, serialised before anything is timed. */
async function warmUp(up: Upstream): Promise<void> {
  const modes = new Set<Version>([
    ...(options.only.has("cpu") ? [options.cpuMode] : []),
    ...(options.only.has("cost") ? options.modes : []),
  ]);
  for (const mode of modes) {
    up.version = mode;
    up.model = undefined;
    const worker = await freshWorker(up, HEAP_CAP);
    try {
      const tables = mode === options.cpuMode && options.only.has("cpu") ? ["base", "rich"] : [];
      if (options.only.has("cost") && options.modes.includes(mode)) tables.push(...options.costRows.map(baseAlias));
      for (const alias of new Set(tables)) {
        for (const format of options.formats) {
          const d = await download(
            `${worker.url}/export.${format}?resource=${alias}&limit=${WARM_ROWS}&_warm=1`,
            {},
            () => () => {},
          );
          if (d.status !== 200)
            throw new Error(
              `warm-up export ${alias} ${format} on CKAN ${mode} answered ${d.status}: ${d.tail.slice(0, 200)}`,
            );
        }
      }
    } finally {
      await worker.stop();
    }
  }
  if (options.only.has("cost"))
    up.store.want(
      BASE,
      "dump",
      BASE.fields.map((_, i) => i),
      Math.max(...options.costRows),
    );
  const begun = performance.now();
  const chunks = up.store.prepareSeen();
  console.log(`  serialised ${chunks} chunks of 10,000 rows in ${((performance.now() - begun) / 1000).toFixed(1)} s`);
}

async function floors(up: Upstream): Promise<FetchFloor[]> {
  up.version = options.cpuMode;
  up.model = undefined;
  const floor = await freshWorker(up, "", true);
  const plan: [string, number][] = [
    ["base", QUARTER],
    ["base", MILLION],
    ["rich", RICH_ROWS],
  ];
  try {
    const results: FetchFloor[] = [];
    for (const [table, rows] of plan) {
      for (const format of options.formats) {
        // Both formats ask for CSV pages after the first (see README, "How it talks to CKAN").
        const records = "csv";
        let best: FetchFloor | undefined;
        // Best of two: the first run also opens connections and warms the floor worker.
        for (let i = 0; i < 2; i++) {
          up.resetStats();
          await settle(floor.workerPid);
          const before = sample(floor.workerPid).cpuSeconds;
          const { body, wallMs } = await getJson<{ pages: number; firstPageMs: number }>(
            `${floor.url}/fetch?resource=${table}&rows=${rows}&format=${records}`,
          );
          const cpuSeconds = sample(floor.workerPid).cpuSeconds - before;
          if (!best || cpuSeconds < best.cpuSeconds)
            best = {
              table: table as "base" | "rich",
              format,
              rows,
              wallMs,
              firstPageMs: body.firstPageMs,
              pages: body.pages,
              upstreamBytes: up.stats.bytes,
              cpuSeconds,
            };
        }
        results.push(best!);
        console.log(
          `  floor ${table} ${records} ${rows}: CPU ${best!.cpuSeconds.toFixed(2)} s, ${(best!.wallMs / 1000).toFixed(2)} s`,
        );
      }
    }
    return results;
  } finally {
    await floor.stop();
  }
}

async function cpuRuns(up: Upstream): Promise<ExportResult[]> {
  up.version = options.cpuMode;
  up.model = undefined;
  const results: ExportResult[] = [];
  // A quarter of the rows, then all, in one process: the growth of its peak RSS is what the rows cost.
  for (let n = 1; n <= options.repeat; n++) {
    for (const format of options.formats) {
      const proc = `${format}-${n}`;
      results.push(
        ...(await inProcess(
          up,
          HEAP_CAP,
          [QUARTER, MILLION].map((rows) => ({ table: "base" as const, format, rows, proc })),
        )),
      );
    }
  }
  results.push(
    ...(await inProcess(
      up,
      HEAP_CAP,
      options.formats.map((format) => ({ table: "rich" as const, format, rows: RICH_ROWS, proc: "rich" })),
    )),
  );
  const cacheFormat = options.formats.includes("csv") ? "csv" : options.formats[0]!;
  results.push(
    ...(await inProcess(up, HEAP_CAP, [{ table: "base", format: cacheFormat, rows: CACHE_ROWS, proc: "cache" }], true)),
  );
  if (options.formats.includes("json"))
    results.push(
      ...(await inProcess(up, SMALL_HEAP, [{ table: "base", format: "json", rows: MILLION, proc: "small-heap" }])),
    );
  if (options.extra) {
    if (options.formats.includes("json"))
      results.push(
        ...(await inProcess(up, HEAP_CAP, [
          { table: "base", format: "json", rows: MILLION, gzip: true, proc: "gzip" },
        ])),
      );
    if (options.formats.includes("csv"))
      results.push(
        ...(await inProcess(up, "none", [{ table: "base", format: "csv", rows: MILLION, proc: "uncapped" }])),
      );
  }
  return results;
}

async function dumpRun(up: Upstream, rows: number): Promise<DumpResult> {
  up.resetStats();
  const lines = lineCounter(false);
  const d = await download(`${up.url}/datastore/dump/${id(rows)}`, {}, () => lines.write);
  const result: DumpResult = {
    mode: up.version,
    cores: up.model?.cores ?? 0,
    rows,
    status: d.status,
    wallMs: d.wallMs,
    ttfbMs: d.ttfbMs,
    bytes: d.bytes,
    rowsSeen: (await lines.count()) - 1,
    upstreamModelS: up.stats.modelSeconds,
    upstreamLateMs: up.stats.lateMs,
  };
  console.log(
    `  dump ${rows} rows, CKAN ${up.version}: ${(d.wallMs / 1000).toFixed(2)} s, ${(d.bytes / 1024 ** 2).toFixed(1)} MB`,
  );
  return result;
}

/** Cost cases of at most this many rows run BENCH_COST_REPEAT times; longer ones once. */
const SHORT_COST_ROWS = 200_000;

/** The run of median wall time (an odd count: one of them; an even one: the faster middle one). */
function medianRun<T extends { wallMs: number }>(runs: T[]): T {
  return [...runs].sort((a, b) => a.wallMs - b.wallMs)[(runs.length - 1) >> 1]!;
}

async function costRuns(up: Upstream): Promise<{ exports: ExportResult[]; dumps: DumpResult[] }> {
  const exports: ExportResult[] = [];
  const dumps: DumpResult[] = [];
  for (const mode of options.modes) {
    up.version = mode;
    const worker = await freshWorker(up, HEAP_CAP);
    try {
      await settle(worker.workerPid);
      const baselineMb = sample(worker.workerPid).rssMb;
      for (const cores of options.cores) {
        up.model = fit(mode, { workers: options.workers, cores });
        for (const rows of options.costRows) {
          // Short runs are repeated, the dump and the exports in turn, and the median run of each kept.
          const runs = rows <= SHORT_COST_ROWS ? Math.max(1, options.costRepeat) : 1;
          const dumped: DumpResult[] = [];
          const exported = new Map<Format, ExportResult[]>(options.formats.map((f) => [f, []]));
          for (let run = 0; run < runs; run++) {
            dumped.push(await dumpRun(up, rows));
            for (const format of options.formats) {
              exported
                .get(format)!
                .push(
                  await measure(
                    up,
                    worker,
                    { table: "base", format, rows, alias: baseAlias(rows), proc: `cost-${mode}`, heap: "128 MB" },
                    "cold",
                    baselineMb,
                  ),
                );
            }
          }
          dumps.push(medianRun(dumped));
          for (const measured of exported.values()) exports.push(medianRun(measured));
        }
      }
      // Latency hidden: the same export with every page 150 ms further away, at the measured CPU.
      if (options.latencyMs > 0 && mode !== "2.11") {
        // Paired: the export without the delay right before the one with it (a busy machine drifts).
        const rows = Math.min(...options.costRows);
        const pair = {
          table: "base",
          format: "csv",
          rows,
          alias: baseAlias(rows),
          proc: `latency-${mode}`,
          heap: "128 MB",
        } as const;
        up.model = fit(mode, { workers: options.workers, cores: options.cores[0] });
        exports.push(await measure(up, worker, pair, "cold", baselineMb));
        up.model = fit(mode, { workers: options.workers, cores: options.cores[0], latencyMs: options.latencyMs });
        exports.push(await measure(up, worker, pair, "cold", baselineMb));
      }
    } finally {
      await worker.stop();
    }
  }
  up.model = undefined;
  return { exports, dumps };
}

/** Bytes the upstream sends for the same pages in each records_format (the worker never asks for objects). */
async function formatBytes(up: Upstream, rows: number): Promise<Report["formats"]> {
  up.model = undefined;
  const total = { lists: 0, objects: 0, csv: 0 };
  for (const format of ["lists", "objects", "csv"] as const) {
    for (let offset = 0; offset < rows; offset += 32000) {
      const body = {
        resource_id: id(MILLION),
        limit: Math.min(32000, rows - offset),
        offset,
        sort: "_id",
        records_format: format,
        include_total: offset === 0,
      };
      const response = await fetch(`${up.url}/api/action/datastore_search`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      total[format] += (await response.arrayBuffer()).byteLength;
    }
  }
  return { rows, listsBytes: total.lists, objectsBytes: total.objects, csvBytes: total.csv };
}

function machine(): Omit<Machine, "otherLoad"> {
  let workerd = "unknown";
  try {
    workerd = execFileSync(join(root, "node_modules", ".bin", "workerd"), ["--version"], { encoding: "utf8" })
      .trim()
      .replace(/^workerd\s+/, "");
  } catch {
    // Reported as unknown.
  }
  let code = "unknown";
  try {
    code = execFileSync("git", ["describe", "--always", "--dirty=+uncommitted changes"], {
      cwd: root,
      encoding: "utf8",
    })
      .trim()
      .replace("+", " + ");
  } catch {
    // Not a git checkout.
  }
  const wrangler = (
    JSON.parse(readFileSync(join(root, "node_modules", "wrangler", "package.json"), "utf8")) as { version: string }
  ).version;
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    cores: os.cpus().length,
    cpuModel: os.cpus()[0]?.model.trim() ?? "unknown CPU",
    memoryGb: os.totalmem() / 1024 ** 3,
    node: process.version,
    workerd,
    wrangler,
    code,
    heapCap: HEAP_CAP,
  };
}

async function main(): Promise<void> {
  // Other work on the machine skews every figure; the report says how much there was.
  const otherLoad = watchOtherLoad();
  const models = VERSIONS.map((v) => fit(v, { workers: options.workers }));
  let check: CheckRow[] | undefined;
  if (options.only.has("check")) {
    console.log("bench: cost model self-check (200,000 rows, each CKAN version)");
    check = await selfCheck(models);
    for (const row of check)
      console.log(
        `  CKAN ${row.version} ${row.name}: real ${row.ckanS.toFixed(3)} s, model ${row.modelS.toFixed(3)} s, bench upstream ${row.measuredS.toFixed(3)} s`,
      );
  }
  const exports: ExportResult[] = [];
  let fetchFloors: FetchFloor[] = [];
  let dumps: DumpResult[] = [];
  let formats: Report["formats"];
  let memory: MemoryRow[] | undefined;
  let aggregate: AggregateRow[] | undefined;
  if (
    options.only.has("cpu") ||
    options.only.has("cost") ||
    options.only.has("memory") ||
    options.only.has("aggregate")
  ) {
    const up = await startUpstream({ resources });
    upstream = up;
    if (options.only.has("memory")) {
      console.log("bench: memory as the isolate holds it (inspector, a fresh wrangler dev per run)");
      memory = await memoryRuns((flags) => freshWorker(up, flags), up, { ...memoryDefaults(), rows: MILLION });
    }
    if (options.only.has("aggregate")) {
      console.log(
        "bench: an aggregate in the worker against the CSV export of the same rows (fresh wrangler dev per run)",
      );
      aggregate = await aggregateRuns((flags) => freshWorker(up, flags), up, baseAlias);
      aggregate.push(...(await sqlRuns((vars) => freshWorker(up, "--max-old-space-size=128", false, false, vars))));
    }
    console.log("bench: warm-up (small exports, then every page shape they asked for serialised)");
    await warmUp(up);
    if (options.only.has("cpu")) {
      console.log(`bench: floors (zero cost, CKAN ${options.cpuMode})`);
      fetchFloors = await floors(up);
      console.log(`bench: CPU and RSS (zero cost, CKAN ${options.cpuMode}, a fresh wrangler dev per row of processes)`);
      exports.push(...(await cpuRuns(up)));
    }
    if (options.only.has("cost")) {
      console.log(
        `bench: against the dump (CKAN's costs, ${options.workers} CKAN workers, ${options.cores.join(" and ")} cores)`,
      );
      const cost = await costRuns(up);
      exports.push(...cost.exports);
      dumps = cost.dumps;
    }
    formats = await formatBytes(up, CACHE_ROWS);
  }
  const partial = {
    machine: { ...machine(), otherLoad: otherLoad.stop() },
    subset,
    costRepeat: { rows: SHORT_COST_ROWS, runs: Math.max(1, options.costRepeat) },
    models,
    cores: impliedCores(models),
    check,
    exports,
    fetchFloors,
    dumps,
    formats,
    memory,
  };
  const { targets, notes } = evaluateTargets(partial);
  const report: Report = { ...partial, targets, notes, totalSeconds: (performance.now() - started) / 1000 };
  const text = render(report) + (aggregate === undefined ? "" : `\n${renderAggregate(aggregate)}`);
  console.log(`\n${text}`);
  const out = subset.length === 0 ? join("bench", "RESULTS.md") : join("bench", "tmp", "RESULTS.partial.md");
  mkdirSync(join(root, "bench", "tmp"), { recursive: true });
  // The section `npm run bench:snapshot` wrote (a run of many minutes) stays until it runs again.
  const kept = existsSync(join(root, out))
    ? sectionOf(readFileSync(join(root, out), "utf8"), SNAPSHOT_SECTION)
    : undefined;
  writeFileSync(join(root, out), kept === undefined ? text : withSection(text, kept));
  console.log(`bench: wrote ${out}`);
}

const cleanUp = (): void => {
  killAllNow();
  rmSync(scratch, { recursive: true, force: true });
  try {
    rmdirSync(join(root, "bench", "tmp")); // only when no other run is using it
  } catch {
    // Not empty, or already gone.
  }
};
process.on("exit", cleanUp);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => process.exit(130));

try {
  await main();
} catch (error) {
  console.error("bench failed:", error);
  process.exitCode = 1;
} finally {
  await upstream?.close();
  cleanUp();
}
process.exit();
