// `npm run bench`: the worker's exports against a synthetic CKAN, beside the floors that bound them.
// Prints one report and writes it to bench/RESULTS.md. Loopback only; every child is killed at the end.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { get, type IncomingMessage } from "node:http";
import { createGunzip } from "node:zlib";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { evaluateTargets, render, type ExportResult, type FetchFloor, type ParseFloor, type Report } from "./report.ts";
import { RESOURCE_ID, startUpstream, type Upstream } from "./upstream.ts";
import { buildWorker, killAllNow, sample, startWrangler, watchOtherLoad, type Wrangler } from "./workerd.ts";

const ROWS = 1_000_000;
const PAGE_SIZE = 32000;
const SLOW_MS = 150;
/**
 * Production isolates stop at 128 MB; wrangler dev sets no limit, so V8 grows its heap instead of
 * collecting and peak RSS would measure V8's heap sizing, not what the worker keeps. Export workers
 * run with this cap unless a case says otherwise (the floor worker holds every page by design: no cap).
 * BENCH_V8_FLAGS overrides it.
 */
const HEAP_CAP = process.env.BENCH_V8_FLAGS ?? "--max-old-space-size=128";
const root = fileURLToPath(new URL("..", import.meta.url));
const scratch = join(root, "bench", "tmp", `run-${process.pid}`);
const started = performance.now();

interface Download {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  bytes: number;
  ttfbMs: number;
  wallMs: number;
  tail: string;
  /** Set when the connection ended before the response did. */
  cutOff?: string;
}

/** Reads a response to the end, handing each chunk to the sink `open` makes for it, keeping none of it. */
function download(url: string, headers: Record<string, string>, open: (response: IncomingMessage) => (chunk: Buffer) => void): Promise<Download> {
  return new Promise((resolve) => {
    const begun = performance.now();
    const request = get(url, { agent: false, headers }, (response) => {
      let ttfbMs = Number.NaN;
      let bytes = 0;
      let last: Buffer = Buffer.alloc(0);
      let done = false;
      const onChunk = open(response);
      const finish = (cutOff?: string): void => {
        if (done) return;
        done = true;
        resolve({ status: response.statusCode ?? 0, headers: response.headers, bytes, ttfbMs, wallMs: performance.now() - begun, tail: last.subarray(-300).toString(), ...(cutOff ? { cutOff } : {}) });
      };
      response.on("data", (chunk: Buffer) => {
        if (bytes === 0) ttfbMs = performance.now() - begun;
        bytes += chunk.length;
        onChunk(chunk);
        last = chunk;
      });
      response.on("end", () => finish());
      // A cut-off download is a result to report, not a reason to stop the benchmark.
      response.on("error", (error) => finish(error.message));
      response.on("close", () => finish(response.complete ? undefined : "the connection closed before the end"));
    });
    // No answer at all (the worker crashed or never listened) is also a result to report.
    request.on("error", (error) =>
      resolve({ status: 0, headers: {}, bytes: 0, ttfbMs: Number.NaN, wallMs: performance.now() - begun, tail: "", cutOff: error.message }),
    );
  });
}

async function getJson<T>(url: string): Promise<{ body: T; wallMs: number }> {
  const d = await new Promise<{ text: string; wallMs: number; status: number }>((resolve, reject) => {
    const begun = performance.now();
    get(url, { agent: false }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (c: string) => (text += c));
      response.on("end", () => resolve({ text, wallMs: performance.now() - begun, status: response.statusCode ?? 0 }));
      response.on("error", reject);
    }).on("error", reject);
  });
  if (d.status !== 200) throw new Error(`${url} answered ${d.status}: ${d.text.slice(0, 300)}`);
  return { body: JSON.parse(d.text) as T, wallMs: d.wallMs };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits until the process stops using CPU, so work after the response (logs, cache writes) is counted. */
async function settle(pid: number): Promise<void> {
  for (let i = 0; i < 40; i++) {
    const before = sample(pid).cpuSeconds;
    await sleep(250);
    const after = sample(pid).cpuSeconds;
    if (Number.isNaN(after) || after - before < 0.02) return;
  }
}

/** Module-level only so the final clean-up can close it. */
let upstream: Upstream | undefined;
let serial = 0;

async function freshWrangler(build: { config: string; bundle?: string }, vars: Record<string, string>, v8Flags = ""): Promise<Wrangler> {
  const persistTo = join(scratch, `state-${++serial}`);
  mkdirSync(persistTo, { recursive: true });
  return startWrangler({ root, ...build, vars, persistTo, v8Flags });
}

let built: { bundle: string; config: string } | undefined;

/** A fresh process running the bench's build of the export worker. */
function exportWorker(up: Upstream, heapCap = true): Promise<Wrangler> {
  built ??= buildWorker(root, scratch);
  const vars = { CKAN_BASE_URL: up.url, MAX_ROWS: "2000000", RESOURCES: JSON.stringify({ bench: RESOURCE_ID }), SNAPSHOT_JOBS: "[]" };
  return freshWrangler(built, vars, heapCap ? HEAP_CAP : "");
}

async function floors(up: Upstream): Promise<{ fetchFloors: FetchFloor[]; parseFloors: ParseFloor[] }> {
  const floor = await freshWrangler({ config: "bench/wrangler.floor.toml" }, { CKAN_BASE_URL: up.url, RESOURCE_ID });
  try {
    const fetchFloors: FetchFloor[] = [];
    const parseFloors: ParseFloor[] = [];
    const plan: [number, number][] = [[10_000, 0], [100_000, 0], [500_000, 0], [ROWS, 0], [100_000, SLOW_MS], [ROWS, SLOW_MS]];
    for (const [rows, latencyMs] of plan) {
      up.latencyMs = latencyMs;
      let best: FetchFloor | undefined;
      // Best of two without latency: the first run also opens connections and warms the floor worker.
      for (let i = 0; i < (latencyMs === 0 ? 2 : 1); i++) {
        up.resetStats();
        await settle(floor.workerPid);
        const before = sample(floor.workerPid).cpuSeconds;
        const { body, wallMs } = await getJson<{ pages: number; firstPageMs: number }>(`${floor.url}/fetch?rows=${rows}`);
        const cpuSeconds = sample(floor.workerPid).cpuSeconds - before;
        if (!best || wallMs < best.wallMs) best = { rows, latencyMs, wallMs, firstPageMs: body.firstPageMs, pages: body.pages, upstreamBytes: up.stats.bytes, cpuSeconds };
      }
      fetchFloors.push(best!);
    }
    up.latencyMs = 0;
    for (const rows of [10_000, 100_000, 500_000, ROWS]) {
      await getJson(`${floor.url}/load?rows=${rows}`);
      await settle(floor.workerPid);
      // CPU is read in 10 ms ticks: repeat small parses so the figure is not mostly rounding.
      const repeat = Math.max(1, Math.min(20, Math.round(300_000 / rows)));
      const before = sample(floor.workerPid).cpuSeconds;
      const { body } = await getJson<{ records: number }>(`${floor.url}/parse?repeat=${repeat}`);
      const cpu = sample(floor.workerPid).cpuSeconds - before;
      if (body.records !== rows * repeat) throw new Error(`floor parsed ${body.records} records, expected ${rows * repeat}`);
      parseFloors.push({ rows, cpuSeconds: cpu / repeat, repeat });
      await getJson(`${floor.url}/drop`);
    }
    return { fetchFloors, parseFloors };
  } finally {
    await floor.stop();
  }
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

interface ExportCase {
  format: "csv" | "json";
  rows: number;
  latencyMs: number;
  /** Ask for gzip, as browsers and spreadsheets do; otherwise the worker's uncompressed output is measured. */
  gzip?: boolean;
  /** Run without HEAP_CAP, to show what wrangler dev's own default does to RSS. */
  uncapped?: boolean;
}

/** Lines in a body, read through gunzip when it is compressed. */
function lineCounter(compressed: boolean): { write(chunk: Buffer): void; count(): Promise<number> } {
  let lines = 0;
  const tally = (chunk: Buffer): void => {
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
  };
  if (!compressed) return { write: tally, count: async () => lines };
  const gunzip = createGunzip();
  gunzip.on("data", tally);
  const ended = new Promise<void>((resolve) => {
    gunzip.on("end", resolve);
    gunzip.on("error", () => resolve());
  });
  return { write: (chunk) => void gunzip.write(chunk), count: async () => (gunzip.end(), await ended, lines) };
}

async function measure(up: Upstream, worker: Wrangler, c: ExportCase, run: "cold" | "cached", baselineMb: number): Promise<ExportResult> {
  up.resetStats();
  const logFrom = worker.output.length;
  const before = sample(worker.workerPid);
  const proxyBefore = sample(worker.proxyPid);
  let lines = lineCounter(false);
  const d = await download(`${worker.url}/export.${c.format}?resource=bench&limit=${c.rows}`, c.gzip ? { "accept-encoding": "gzip" } : {}, (response) => {
    lines = lineCounter(response.headers["content-encoding"] === "gzip");
    return lines.write;
  });
  await settle(worker.workerPid);
  const after = sample(worker.workerPid);
  const framing = c.format === "csv" ? 1 : 2; // CSV: the header line; JSON: the "[" and "]" lines
  const result: ExportResult = {
    format: c.format, gzip: c.gzip === true, uncapped: c.uncapped === true, rows: c.rows, latencyMs: up.latencyMs, run, status: d.status,
    wallMs: d.wallMs, ttfbMs: d.ttfbMs, bytes: d.bytes, rowsSeen: Math.max(0, (await lines.count()) - framing),
    upstreamRequests: up.stats.requests, upstreamBytes: up.stats.bytes, upstreamGenerated: up.stats.generated,
    recordsFormats: { ...up.stats.formats }, requestLog: [...up.stats.log],
    peakMb: after.peakMb, baselineMb, cpuSeconds: after.cpuSeconds - before.cpuSeconds,
    proxyCpuSeconds: sample(worker.proxyPid).cpuSeconds - proxyBefore.cpuSeconds,
    xCache: String(d.headers["x-cache"] ?? "absent"),
    contentEncoding: String(d.headers["content-encoding"] ?? "identity"),
  };
  const cacheNote = d.headers["x-cache-note"];
  if (typeof cacheNote === "string") result.cacheNote = cacheNote;
  const upstreamMs = workerUpstreamMs(worker, logFrom);
  if (upstreamMs !== undefined) result.workerUpstreamMs = upstreamMs;
  const label = `${c.format}${c.gzip ? "+gzip" : ""}${c.uncapped ? " (no heap cap)" : ""} ${c.rows} rows, ${up.latencyMs} ms/page, ${run}`;
  if (d.status !== 200 || d.cutOff !== undefined) {
    // Keep the worker's last words: they say why (paths of this machine are cut out).
    const said = worker.output
      .slice(logFrom)
      .map((l) => l.replace(/\x1b\[[0-9;]*m/g, "").split(root).join(""))
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
  console.log(`  ${label}: ${(e.wallMs / 1000).toFixed(2)} s, TTFB ${e.ttfbMs.toFixed(0)} ms, ${e.upstreamRequests} upstream req, CPU ${e.cpuSeconds.toFixed(2)} s, peak RSS ${e.peakMb.toFixed(0)} MB, X-Cache ${e.xCache}`);
  return result;
}

const CASES: ExportCase[] = [
  { format: "csv", rows: 10_000, latencyMs: 0 },
  { format: "json", rows: 10_000, latencyMs: 0 },
  { format: "csv", rows: 100_000, latencyMs: 0 },
  { format: "json", rows: 100_000, latencyMs: 0 },
  { format: "csv", rows: 500_000, latencyMs: 0 },
  { format: "csv", rows: ROWS, latencyMs: 0 },
  { format: "json", rows: ROWS, latencyMs: 0 },
  { format: "csv", rows: 100_000, latencyMs: SLOW_MS },
  { format: "csv", rows: ROWS, latencyMs: SLOW_MS },
  // Browsers and dashboards ask for gzip; JSON is where the worker (or workerd) then compresses.
  { format: "json", rows: ROWS, latencyMs: 0, gzip: true },
  { format: "csv", rows: 500_000, latencyMs: 0, uncapped: true },
  { format: "csv", rows: ROWS, latencyMs: 0, uncapped: true },
];

/**
 * Runs every export once, unmeasured, so the upstream has served each page shape the worker asks
 * for before anything is timed (shapes other than all-column lists/csv are serialised on first use).
 */
async function warmUp(up: Upstream): Promise<void> {
  const worker = await exportWorker(up);
  try {
    const seen = new Set<string>();
    for (const c of CASES) {
      const key = `${c.format} ${c.rows}`;
      if (seen.has(key)) continue;
      seen.add(key);
      await download(`${worker.url}/export.${c.format}?resource=bench&limit=${c.rows}&_warm=1`, {}, () => () => {});
    }
  } finally {
    await worker.stop();
  }
}

async function exports(up: Upstream): Promise<ExportResult[]> {
  const results: ExportResult[] = [];
  for (const c of CASES) {
    up.latencyMs = c.latencyMs;
    // A fresh process per export: VmHWM never goes down, and a warm isolate would skip the keyset probe.
    const worker = await exportWorker(up, c.uncapped !== true);
    try {
      await settle(worker.workerPid);
      const baselineMb = sample(worker.workerPid).rssMb;
      results.push(await measure(up, worker, c, "cold", baselineMb));
      results.push(await measure(up, worker, c, "cached", baselineMb));
    } finally {
      await worker.stop();
    }
  }
  up.latencyMs = 0;
  return results;
}

/**
 * Peak RSS moves by tens of MB with GC timing, so the memory target takes the median of three fresh
 * processes per size: the main run's plus two cold CSV exports here.
 */
async function memoryRuns(up: Upstream, exportResults: ExportResult[]): Promise<Report["memory"]> {
  const memory: Report["memory"] = [];
  for (const rows of [500_000, ROWS]) {
    const first = exportResults.find((e) => e.format === "csv" && e.rows === rows && e.latencyMs === 0 && e.run === "cold" && !e.gzip && !e.uncapped);
    const peaks = first ? [first.peakMb] : [];
    for (let i = 0; i < 2; i++) {
      const worker = await exportWorker(up);
      try {
        await settle(worker.workerPid);
        const d = await download(`${worker.url}/export.csv?resource=bench&limit=${rows}`, {}, () => () => {});
        await settle(worker.workerPid);
        if (d.status === 200 && d.cutOff === undefined) peaks.push(sample(worker.workerPid).peakMb);
      } finally {
        await worker.stop();
      }
    }
    memory.push({ rows, peaksMb: peaks });
  }
  return memory;
}

/** Bytes the upstream sends for the same pages in each records_format (the worker never asks for objects). */
async function formatBytes(up: Upstream, rows: number): Promise<Report["formats"]> {
  const total = { lists: 0, objects: 0, csv: 0 };
  for (const format of ["lists", "objects", "csv"] as const) {
    for (let offset = 0; offset < rows; offset += PAGE_SIZE) {
      const body = { resource_id: RESOURCE_ID, limit: Math.min(PAGE_SIZE, rows - offset), offset, sort: "_id", records_format: format, ...(offset === 0 ? { include_total: true } : {}) };
      const response = await fetch(`${up.url}/api/action/datastore_search`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      total[format] += (await response.arrayBuffer()).byteLength;
    }
  }
  return { rows, listsBytes: total.lists, objectsBytes: total.objects, csvBytes: total.csv };
}

function machine(): Omit<Report["machine"], "otherLoad" | "heapCap"> {
  let workerd = "unknown";
  try {
    workerd = execFileSync(join(root, "node_modules", ".bin", "workerd"), ["--version"], { encoding: "utf8" }).trim().replace(/^workerd\s+/, "");
  } catch {
    // Reported as unknown.
  }
  let code = "unknown";
  try {
    code = execFileSync("git", ["describe", "--always", "--dirty=+uncommitted changes"], { cwd: root, encoding: "utf8" }).trim().replace("+", " + ");
  } catch {
    // Not a git checkout.
  }
  const wrangler = (JSON.parse(readFileSync(join(root, "node_modules", "wrangler", "package.json"), "utf8")) as { version: string }).version;
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    cores: os.cpus().length,
    cpuModel: os.cpus()[0]?.model.trim() ?? "unknown CPU",
    memoryGb: os.totalmem() / 1024 ** 3,
    node: process.version,
    workerd,
    wrangler,
    code,
  };
}

async function main(): Promise<void> {
  // Other work on the machine skews every figure; the report says how much there was.
  const otherLoad = watchOtherLoad();
  console.log(`bench: generating ${ROWS.toLocaleString("en-US")} rows`);
  const up = await startUpstream({ rows: ROWS });
  upstream = up;
  console.log(`bench: upstream ready in ${((performance.now() - started) / 1000).toFixed(1)} s; floors`);
  const { fetchFloors, parseFloors } = await floors(up);
  console.log("bench: warm-up (every export once, unmeasured)");
  await warmUp(up);
  console.log("bench: exports (a fresh wrangler dev per size)");
  const exportResults = await exports(up);
  console.log("bench: peak RSS, two more fresh processes per size");
  const memory = await memoryRuns(up, exportResults);
  console.log("bench: bytes per records_format");
  const formats = await formatBytes(up, ROWS);
  const partial = { machine: { ...machine(), otherLoad: otherLoad.stop(), heapCap: HEAP_CAP }, exports: exportResults, fetchFloors, parseFloors, formats, memory };
  const { targets, notes } = evaluateTargets(partial);
  const report: Report = { ...partial, targets, notes, totalSeconds: (performance.now() - started) / 1000 };
  const text = render(report);
  console.log(`\n${text}`);
  writeFileSync(join(root, "bench", "RESULTS.md"), text);
  console.log("bench: wrote bench/RESULTS.md");
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
