// `npm run bench:snapshot [-- --rows N] [--format csv|xlsx|parquet] [--compress gzip]`: one snapshot run (CSV
// unless --format says XLSX or Parquet; --compress gzip stores CSV gzipped) of an N-row table (20,000,000 by
// default) as a Workflow (README, "Runs as Workflows"), against the bench's zero-cost synthetic CKAN
// 2.12 (bench/upstream.ts) on loopback, the worker bundled once and run by `wrangler dev` under the
// 128 MB heap cap of `npm run bench`. The run is started by POST /snapshots/<name>/run and followed by
// GET on the same path every second (each step's rows, bytes and time). CPU is sampled from /proc
// of the workerd that runs the worker (the Workflow engine and wrangler dev's local R2, JavaScript in
// that process, included) and split at the times the run record says each step ended. At the end the
// stored file is read back through GET /snapshots/<name>/latest.<ext>, hashed and its rows counted
// against the manifest by an independent reader (Node's gunzip for gzip, Info-ZIP's unzip for XLSX, DuckDB for Parquet). Writes its section of bench/RESULTS.md ("Snapshot runs as Workflows"), or
// bench/tmp/RESULTS-snapshot.partial.md for a run of another size. Every child is killed at the end.
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  statfsSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import type { RunView } from "../src/snapshot/runs.ts";
import { BASE } from "./ckan/tables.ts";
import { type Download, download, lineCounter, sleep } from "./http.ts";
import { SNAPSHOT_SECTION, withSection } from "./report.ts";
import { startUpstream, type Upstream } from "./upstream.ts";
import { buildWorker, killAllNow, lastWords, sample, startWrangler, type Wrangler } from "./workerd.ts";

const DEFAULT_ROWS = 20_000_000;
const { values } = parseArgs({
  options: {
    rows: { type: "string", default: String(DEFAULT_ROWS) },
    "heap-cap": { type: "string", default: "none" },
    format: { type: "string", default: "csv" },
    compress: { type: "string", default: "none" },
  },
});
const FORMAT = values.format;
if (FORMAT !== "csv" && FORMAT !== "xlsx" && FORMAT !== "parquet")
  throw new Error(`--format must be csv, xlsx or parquet, not ${FORMAT}`);
const GZIP = values.compress === "gzip";
if (GZIP && FORMAT !== "csv") throw new Error("--compress gzip applies to CSV");
/** What the report calls the file: CSV, CSV gzipped, XLSX. */
const KIND = FORMAT === "xlsx" ? "XLSX" : FORMAT === "parquet" ? "Parquet" : GZIP ? "CSV (gzip)" : "CSV";
/** The run the default settings make writes bench/RESULTS.md; any other goes to bench/tmp. */
const STANDARD = FORMAT === "csv" && !GZIP;
const ROWS = Number(values.rows);
if (!Number.isSafeInteger(ROWS) || ROWS < 1) throw new Error(`--rows must be a positive integer, not ${values.rows}`);

/**
 * No V8 heap cap by default: wrangler dev passes V8 flags to every isolate of its workerd, its local
 * R2 (a Durable Object in JavaScript) included, and one of them ran out of a 128 MB heap in seal and
 * publish of a 3 GiB object when those steps still read and copied the whole file (bench/RESULTS.md). The worker's own heap is watched over the inspector
 * instead. `--heap-cap 128` caps them all as `npm run bench` does.
 */
const HEAP_CAP = values["heap-cap"] === "none" ? "" : `--max-old-space-size=${Number(values["heap-cap"])}`;
const ADMIN = "bench-admin-token";
const JOB = "bench-big";
/** The Workers Paid default per invocation (each step is one); the most is 5 minutes. */
const CPU_LIMIT_S = 30;
const MB = 2 ** 20;
const root = fileURLToPath(new URL("..", import.meta.url));
const scratch = join(root, "bench", "tmp", `snapshot-${process.pid}`);
const id = "5a950000-0000-4000-8000-000000000001";

/** workerd's CPU seconds over time, sampled often enough to split it at step ends. */
class CpuTrace {
  readonly #points: { t: number; cpu: number }[] = [];
  readonly #timer: ReturnType<typeof setInterval>;
  readonly #pid: number;
  constructor(pid: number) {
    this.#pid = pid;
    this.#take();
    this.#timer = setInterval(() => this.#take(), 100);
  }
  #take(): void {
    const cpu = sample(this.#pid).cpuSeconds;
    if (!Number.isNaN(cpu)) this.#points.push({ t: Date.now(), cpu });
  }
  /** CPU seconds at wall-clock time `t` (ms), linear between samples. */
  at(t: number): number {
    const p = this.#points;
    if (p.length === 0) return Number.NaN;
    if (t <= p[0]!.t) return p[0]!.cpu;
    let lo = 0;
    let hi = p.length - 1;
    if (t >= p[hi]!.t) return p[hi]!.cpu;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (p[mid]!.t <= t) lo = mid;
      else hi = mid;
    }
    const a = p[lo]!;
    const b = p[hi]!;
    return a.cpu + ((b.cpu - a.cpu) * (t - a.t)) / (b.t - a.t);
  }
  stop(): void {
    clearInterval(this.#timer);
    this.#take();
  }
}

/**
 * The user worker's own V8 heap (not the other isolates wrangler dev runs in the same workerd: the
 * Workflow engine, the local R2), asked every second over wrangler's inspector proxy: in production
 * it is this isolate that has 128 MB.
 */
class HeapWatch {
  peakMb = 0;
  lastMb = 0;
  /** When the isolate last answered (ms): a busy isolate answers late. */
  lastAt = 0;
  /** When the most was seen (ms). */
  peakAt = 0;
  #socket: WebSocket | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  async start(inspectorPort: number): Promise<void> {
    const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json()) as {
      webSocketDebuggerUrl: string;
    }[];
    const url = targets[0]?.webSocketDebuggerUrl;
    if (url === undefined) throw new Error("wrangler's inspector lists no worker");
    // The proxy admits DevTools' own origins only; undici's WebSocket takes headers as an extension.
    const socket = new WebSocket(url, { headers: { origin: "http://localhost" } } as unknown as string[]);
    await new Promise((resolve, reject) => {
      socket.addEventListener("open", resolve, { once: true });
      socket.addEventListener("error", reject, { once: true });
    });
    socket.addEventListener("message", (event) => {
      const used = (JSON.parse(String(event.data)) as { result?: { usedSize?: number } }).result?.usedSize;
      if (typeof used === "number") {
        this.lastMb = used / MB;
        this.lastAt = Date.now();
        if (this.lastMb > this.peakMb) [this.peakMb, this.peakAt] = [this.lastMb, this.lastAt];
      }
    });
    let id = 0;
    this.#socket = socket;
    this.#timer = setInterval(() => socket.send(JSON.stringify({ id: ++id, method: "Runtime.getHeapUsage" })), 1000);
  }
  stop(): void {
    clearInterval(this.#timer);
    this.#socket?.close();
  }
}

/** One step as the Workflow engine logged it: its name and when it started and ended (ms). */
interface EngineStep {
  name: string;
  start: number;
  end: number;
  /** A write step's totals so far (from its result, a PartsState), else undefined. */
  rows?: number;
  bytes?: number;
}

/**
 * The steps of the run as wrangler dev's Workflow engine logged them, to the millisecond: its
 * instance is a Durable Object whose SQLite file (table `states`: STEP_START 5, STEP_SUCCESS 6,
 * STEP_FAILURE 7, each with a `timestamp` in UTC) lies under the persist directory. Read-only, after
 * the run; empty when no such file is found (another wrangler version may store it elsewhere).
 */
function engineSteps(persistTo: string): EngineStep[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else if (entry.name.endsWith(".sqlite")) files.push(join(dir, entry.name));
    }
  };
  walk(persistTo);
  for (const file of files) {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      const table = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'states'").get();
      if (table === undefined) continue;
      const rows = db
        .prepare("SELECT timestamp, event, target, metadata FROM states WHERE event IN (5, 6, 7) ORDER BY id")
        .all() as { timestamp: string; event: number; target: string | null; metadata: string | null }[];
      const open = new Map<string, number>();
      const steps: EngineStep[] = [];
      for (const row of rows) {
        const t = Date.parse(`${String(row.timestamp).replace(" ", "T")}Z`);
        const name = String(row.target).replace(/-\d+$/, "");
        if (row.event === 5) open.set(name, t);
        else if (open.has(name))
          steps.push({
            name: row.event === 7 ? `${name} (failed)` : name,
            start: open.get(name)!,
            end: t,
            ...totals(row.metadata),
          });
      }
      if (steps.length > 0) return steps;
    } finally {
      db.close();
    }
  }
  return [];
}

/** A write step's rows and bytes so far, from the step's result (workflow.ts: an outcome as JSON text, its value a FormatState). */
function totals(metadata: string | null): { rows?: number; bytes?: number } {
  try {
    const result = (JSON.parse(metadata ?? "null") as { result?: unknown } | null)?.result;
    const outcome = JSON.parse(String(result)) as {
      ok?: boolean;
      value?: { rows?: unknown; bytes?: unknown; upload?: unknown };
    };
    const value = outcome.value;
    if (
      outcome.ok !== true ||
      typeof value?.rows !== "number" ||
      typeof value.bytes !== "number" ||
      typeof value.upload !== "object"
    )
      return {};
    return { rows: value.rows, bytes: value.bytes };
  } catch {
    return {};
  }
}

/** A stretch of the run between two ends the run record showed. */
interface Segment {
  label: string;
  /** Write steps in it (more than one when a poll missed a step's end). */
  steps: number;
  end: number;
  wallS: number;
  cpuS: number;
  rows: number;
  bytes: number;
}

const auth = { authorization: `Bearer ${ADMIN}` };

async function call(url: string, init: RequestInit = {}): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, { ...init, headers: { ...auth, ...(init.headers ?? {}) } });
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) as unknown };
  } catch {
    return { status: response.status, body: text };
  }
}

const gib = (bytes: number): string => (bytes / 2 ** 30).toFixed(2);
const thousands = (n: number): string => n.toLocaleString("en-US");
const clock = (seconds: number): string =>
  `${Math.floor(seconds / 60)} min ${(seconds % 60).toFixed(0).padStart(2, "0")} s`;

async function main(): Promise<void> {
  const begun = Date.now();
  // The local R2 keeps the parts and the completed object (no assembled copy, no copy for latest): 2 copies at most.
  const free = statfsSync(root);
  const needGb = (ROWS * 170 * 2) / 1e9;
  const freeGb = (free.bavail * free.bsize) / 1e9;
  if (freeGb < needGb * 1.2)
    throw new Error(
      `about ${needGb.toFixed(0)} GB of disk is needed for ${ROWS} rows under bench/tmp; ${freeGb.toFixed(0)} GB are free`,
    );

  // Pages are read front to back: a window of 10,000-row chunks serves the table, memory stays flat.
  const up: Upstream = await startUpstream({
    resources: [{ id, shape: BASE, rows: ROWS }],
    version: "2.12",
    keepChunks: 50,
  });
  upstreamRef = up;
  mkdirSync(join(scratch, "state"), { recursive: true });
  const built = buildWorker(root, scratch);
  const vars = {
    CKAN_BASE_URL: up.url,
    RESOURCES: JSON.stringify({ big: id }),
    MAX_ROWS: String(ROWS),
    CACHE_TTL_SECONDS: "0",
    ADMIN_TOKEN: ADMIN,
    SNAPSHOT_JOBS: JSON.stringify([
      { name: JOB, resource: "big", formats: [FORMAT], keep: 1, ...(GZIP ? { compress: "gzip" } : {}) },
    ]),
  };
  const worker = await startWrangler({ root, ...built, vars, persistTo: join(scratch, "state"), v8Flags: HEAP_CAP });
  workerRef = worker;
  const base = `${worker.url}/snapshots/${JOB}`;
  const config = { partBytes: 8 * MB, stepBytes: 64 * MB };

  await sleep(1000);
  const heap = new HeapWatch();
  await heap.start(worker.inspectorPort);
  heapRef = heap;
  const trace = new CpuTrace(worker.workerPid);
  const cpu0 = sample(worker.workerPid).cpuSeconds;
  const t0 = Date.now();
  const started = await call(`${base}/run`, { method: "POST" });
  if (started.status !== 202)
    throw new Error(
      `POST ${JOB}/run answered ${started.status}: ${JSON.stringify(started.body).slice(0, 300)}; worker: ${lastWords(worker, root, 8)}`,
    );
  const instance = (started.body as { instance: string; stamp: string }).instance;
  const stamp = (started.body as { stamp: string }).stamp;
  console.log(`bench:snapshot: ${thousands(ROWS)} rows, ${KIND}, run ${instance} started`);

  const seen: RunView[] = [];
  let lastPrint = 0;
  let lastRun: { status: string; stamp: string; started: string; finished: string; error?: string } | undefined;
  let polls = 0;
  for (;;) {
    await sleep(1000);
    const asked = Date.now();
    // wrangler dev's R2 is one Durable Object: while it streams the whole file (seal, publish) the
    // run record waits behind it, and the poll with it.
    const shown = await call(`${base}/run`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
    const pollMs = Date.now() - asked;
    polls++;
    const now = sample(worker.workerPid);
    if (shown === undefined) {
      console.log(
        `  ${clock((Date.now() - t0) / 1000)}  (no answer in 5 s: R2 busy)  CPU ${(now.cpuSeconds - cpu0).toFixed(1)} s  RSS ${now.rssMb.toFixed(0)} MB  worker heap ${heap.lastMb.toFixed(0)} MB ${((Date.now() - heap.lastAt) / 1000).toFixed(0)} s ago`,
      );
      if (Number.isNaN(now.cpuSeconds))
        throw new Error(`the worker's workerd process is gone; worker: ${lastWords(worker, root, 8)}`);
      continue;
    }
    if (Number.isNaN(now.cpuSeconds))
      throw new Error(
        `the worker's workerd process is gone (wrangler dev may have started another: its CPU would not be counted); worker: ${lastWords(worker, root, 8)}`,
      );
    if (shown.status === 200) {
      const view = shown.body as RunView;
      const prev = seen.at(-1);
      if (prev === undefined || prev.updated !== view.updated) seen.push(view);
      if (Date.now() - lastPrint >= 5000) {
        lastPrint = Date.now();
        const s = (Date.now() - t0) / 1000;
        console.log(
          `  ${clock(s)}  ${view.status}  ${view.format ?? "-"} step ${view.step}  ${thousands(view.rows)} rows  ${(view.bytes / MB).toFixed(0)} MiB  ${view.parts} parts  CPU ${(now.cpuSeconds - cpu0).toFixed(1)} s  RSS ${now.rssMb.toFixed(0)} MB  worker heap ${heap.lastMb.toFixed(0)} MB  (answered in ${pollMs} ms)${view.last_error ? `  last error: ${view.last_error}` : ""}`,
        );
      }
      continue;
    }
    if (shown.status !== 404)
      throw new Error(`GET ${JOB}/run answered ${shown.status}: ${JSON.stringify(shown.body).slice(0, 300)}`);
    // No run in progress: either it has not claimed the job yet, or it ended (the listing says which).
    const listing = await call(`${worker.url}/snapshots`);
    const job = (listing.body as { jobs: { name: string; last_run: typeof lastRun | null }[] }).jobs.find(
      (j) => j.name === JOB,
    );
    if (job?.last_run && job.last_run.stamp === stamp) {
      lastRun = job.last_run;
      break;
    }
    if (Date.now() - t0 > 120_000 && seen.length === 0)
      throw new Error(`the run never showed up; worker: ${lastWords(worker, root, 8)}`);
  }
  const tEnd = Date.parse(lastRun.finished);
  const wallS = (tEnd - Date.parse(lastRun.started)) / 1000;
  trace.stop();
  const cpuTotal = trace.at(tEnd) - trace.at(t0);
  const peakMb = sample(worker.workerPid).peakMb;
  console.log(
    `bench:snapshot: run ${lastRun.status} after ${clock(wallS)}${lastRun.error ? `: ${lastRun.error}` : ""}`,
  );

  // Each step's start and end from the engine's log; without it, the ends the polls saw in the record.
  const logged = engineSteps(join(scratch, "state"));
  const segments: Segment[] = logged.length > 0 ? fromEngine(logged, trace) : fromPolls(seen, lastRun, tEnd, trace);
  const writeSegments = segments.filter((s) => s.steps > 0);
  const missed = writeSegments.filter((s) => s.steps > 1).length;
  const betweenCpu = cpuTotal - segments.reduce((n, s) => n + s.cpuS, 0);
  const steps = writeSegments.reduce((n, s) => n + s.steps, 0);

  // The manifest's entry, then the file as a client gets it: bytes, lines and sha256.
  const manifest = (await call(`${base}/manifest.json`)).body as {
    snapshots: { key: string; format: string; rows: number; bytes: number; sha256: string; stamp: string }[];
  };
  const entry = manifest.snapshots.find((s) => s.stamp === stamp && s.format === FORMAT);
  if (entry === undefined)
    throw new Error(`the manifest has no ${KIND} snapshot of ${stamp}: ${JSON.stringify(manifest).slice(0, 400)}`);
  const readCpu0 = sample(worker.workerPid).cpuSeconds;
  const { d, sha256, dataLines } = await readBack(`${base}/latest.${FORMAT}`);
  const readCpu = sample(worker.workerPid).cpuSeconds - readCpu0;
  const checks = {
    status: d.status === 200 && d.cutOff === undefined,
    bytes: d.bytes === entry.bytes,
    sha256: sha256 === entry.sha256,
    rows: dataLines === ROWS && entry.rows === ROWS,
  };
  const whole = Object.values(checks).every(Boolean);
  console.log(
    `bench:snapshot: latest.${FORMAT} read back: HTTP ${d.status}, ${thousands(d.bytes)} bytes, ${thousands(dataLines)} rows, sha256 ${sha256} (${whole ? "matches the manifest" : `MISMATCH ${JSON.stringify(checks)}`}) in ${(d.wallMs / 1000).toFixed(1)} s`,
  );

  const largest = writeSegments
    .filter((s) => s.steps === 1)
    .reduce((a, b) => (b.cpuS > a.cpuS ? b : a), writeSegments[0]!);
  const finishing = segments.filter((s) => s.steps === 0);
  const singles = writeSegments.filter((s) => s.steps === 1);
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
  const maxOf = (xs: number[]): number => Math.max(...xs);
  const stepRows = singles.map((s) => s.rows);
  const report = {
    rows: ROWS,
    status: lastRun.status,
    error: lastRun.error,
    wallS,
    cpuTotal,
    peakMb,
    heapPeakMb: heap.peakMb,
    heapPeakIn: during(heap.peakAt, logged),
    steps,
    missed,
    polls,
    bytes: entry.bytes,
    sha256: entry.sha256,
    readBack: { bytes: d.bytes, rows: dataLines, sha256, whole, wallS: d.wallMs / 1000, cpuS: readCpu },
    perStep: {
      cpuMean: mean(singles.map((s) => s.cpuS)),
      cpuMedian: median(singles.map((s) => s.cpuS)),
      cpuMax: largest?.cpuS ?? Number.NaN,
      cpuMaxLabel: largest?.label,
      wallMean: mean(singles.map((s) => s.wallS)),
      wallMax: maxOf(singles.map((s) => s.wallS)),
      bytesMean: mean(singles.map((s) => s.bytes)),
      rowsMean: mean(stepRows),
    },
    finishing,
    betweenCpu,
    engineLog: logged.length > 0,
    upstream: { requests: up.stats.requests, bytes: up.stats.bytes },
  };
  console.log(JSON.stringify(report, null, 2));
  const text = render(report, config, segments);
  const out =
    ROWS === DEFAULT_ROWS && STANDARD
      ? join(root, "bench", "RESULTS.md")
      : join(root, "bench", "tmp", `RESULTS-snapshot-${FORMAT}${GZIP ? "-gzip" : ""}.partial.md`);
  if (ROWS === DEFAULT_ROWS && STANDARD) {
    writeFileSync(out, withSection(readFileSync(out, "utf8"), text));
  } else {
    mkdirSync(join(root, "bench", "tmp"), { recursive: true });
    writeFileSync(out, `${text}\n`);
  }
  console.log(`bench:snapshot: wrote ${out.slice(root.length)}`);
  console.log(`bench:snapshot: ${((Date.now() - begun) / 1000).toFixed(0)} s in all`);
  if (!whole || lastRun.status !== "ok") process.exitCode = 1;
}

/**
 * The stored file as a client that takes gzip gets it (the stored bytes, hashed as the manifest
 * hashes them), its data rows counted by a reader of our own making neither: Node's gunzip for a
 * gzipped CSV, Info-ZIP's unzip (which checks every entry's CRC-32) for XLSX.
 */
async function readBack(url: string): Promise<{ d: Download; sha256: string; dataLines: number }> {
  const hash = createHash("sha256");
  const lines = lineCounter(GZIP);
  const file = join(scratch, `latest.${FORMAT}`);
  const parts: Buffer[] = [];
  const d = await download(url, GZIP ? { "accept-encoding": "gzip" } : {}, () => (chunk) => {
    hash.update(chunk);
    if (FORMAT !== "csv") parts.push(chunk);
    else lines.write(chunk);
  });
  if (FORMAT === "csv") return { d, sha256: hash.digest("hex"), dataLines: (await lines.count()) - 1 };
  if (FORMAT === "parquet") {
    writeFileSync(file, Buffer.concat(parts));
    const rows = await parquetRows(file);
    rmSync(file);
    return { d, sha256: hash.digest("hex"), dataLines: rows };
  }
  writeFileSync(file, Buffer.concat(parts));
  execFileSync("unzip", ["-tq", file]);
  const rows = await sheetRows(file);
  rmSync(file);
  return { d, sha256: hash.digest("hex"), dataLines: rows - 1 };
}

/** A Parquet file's rows as DuckDB reads them: its first column's values and nulls in every row group, not the footer's count. */
async function parquetRows(file: string): Promise<number> {
  const { DuckDBInstance } = await import("@duckdb/node-api");
  const db = await (await DuckDBInstance.create(":memory:")).connect();
  try {
    const first = String((await db.runAndReadAll(`DESCRIBE FROM read_parquet('${file}')`)).getRows()[0]![0]);
    const column = `"${first.replaceAll('"', '""')}"`;
    const counted = await db.runAndReadAll(
      `SELECT count(${column}) + count(*) FILTER (WHERE ${column} IS NULL) FROM read_parquet('${file}')`,
    );
    return Number(counted.getRows()[0]![0]);
  } finally {
    db.closeSync();
  }
}

/** The `<row` elements of the workbook's sheet as `unzip -p` inflates it, counted as it streams. */
async function sheetRows(file: string): Promise<number> {
  const child = spawn("unzip", ["-p", file, "xl/worksheets/sheet1.xml"], { stdio: ["ignore", "pipe", "inherit"] });
  const mark = Buffer.from("<row");
  let rows = 0;
  let tail = Buffer.alloc(0);
  for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
    const text = Buffer.concat([tail, chunk]);
    for (let at = text.indexOf(mark); at !== -1; at = text.indexOf(mark, at + mark.length)) rows++;
    tail = text.subarray(Math.max(0, text.length - mark.length + 1));
  }
  return rows;
}

/** Which step was running at time `t` (ms), as the engine logged them. */
function during(t: number, logged: EngineStep[]): string {
  const step = logged.find((s) => s.start <= t && t <= s.end);
  if (step !== undefined) return `during "${step.name}"`;
  const before = logged.filter((s) => s.end < t).at(-1);
  return before === undefined ? "before the first step" : `after "${before.name}"`;
}

function fromEngine(logged: EngineStep[], trace: CpuTrace): Segment[] {
  let rows = 0;
  let bytes = 0;
  return logged.map((step) => {
    const write = step.rows !== undefined && new RegExp(`^${FORMAT} step \\d+$`).test(step.name);
    const segment: Segment = {
      label: step.name,
      steps: write ? 1 : 0,
      end: step.end,
      wallS: (step.end - step.start) / 1000,
      cpuS: trace.at(step.end) - trace.at(step.start),
      rows: write ? step.rows! - rows : 0,
      bytes: write ? step.bytes! - bytes : 0,
    };
    if (write) [rows, bytes] = [step.rows!, step.bytes!];
    return segment;
  });
}

/** Stretches between the run record's updates as the polls saw them: a step's end, or the format done. */
function fromPolls(seen: RunView[], lastRun: { started: string }, tEnd: number, trace: CpuTrace): Segment[] {
  const segments: Segment[] = [];
  let prevEnd = Date.parse(seen[0]?.started ?? lastRun.started);
  let prevStep = 0;
  let prevRows = 0;
  let prevBytes = 0;
  const cut = (label: string, steps: number, end: number, rows: number, bytes: number): void => {
    segments.push({
      label,
      steps,
      end,
      wallS: (end - prevEnd) / 1000,
      cpuS: trace.at(end) - trace.at(prevEnd),
      rows: rows - prevRows,
      bytes: bytes - prevBytes,
    });
    prevEnd = end;
    prevRows = rows;
    prevBytes = bytes;
  };
  for (const view of seen) {
    if (view.format !== null && view.step > prevStep) {
      cut(
        view.step - prevStep === 1 ? `csv step ${view.step}` : `csv steps ${prevStep + 1}-${view.step}`,
        view.step - prevStep,
        Date.parse(view.updated),
        view.rows,
        view.bytes,
      );
      prevStep = view.step;
    } else if (view.format === null && view.done.length > 0 && segments.at(-1)?.label !== `${FORMAT} seal + publish`) {
      cut(`${FORMAT} seal + publish`, 0, Date.parse(view.updated), view.done[0]!.rows, view.done[0]!.bytes);
    }
  }
  cut("record", 0, tEnd, prevRows, prevBytes);
  return segments;
}

type Report = {
  rows: number;
  status: string;
  error: string | undefined;
  wallS: number;
  cpuTotal: number;
  peakMb: number;
  heapPeakMb: number;
  heapPeakIn: string;
  steps: number;
  missed: number;
  polls: number;
  bytes: number;
  sha256: string;
  readBack: { bytes: number; rows: number; sha256: string; whole: boolean; wallS: number; cpuS: number };
  perStep: {
    cpuMean: number;
    cpuMedian: number;
    cpuMax: number;
    cpuMaxLabel: string | undefined;
    wallMean: number;
    wallMax: number;
    bytesMean: number;
    rowsMean: number;
  };
  finishing: Segment[];
  betweenCpu: number;
  engineLog: boolean;
  upstream: { requests: number; bytes: number };
};

function render(r: Report, config: { partBytes: number; stepBytes: number }, segments: Segment[]): string {
  const date = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const cpus = os.cpus();
  const code = gitDescribe();
  const p = r.perStep;
  const heaviest = segments.reduce((x, y) => (y.cpuS > x.cpuS ? y : x));
  const lines = [
    SNAPSHOT_SECTION,
    "",
    `\`npm run bench:snapshot -- --rows ${r.rows}${HEAP_CAP === "" ? "" : ` --heap-cap ${values["heap-cap"]}`}\`, ${date}. Machine: ${cpus.length} shared cores (${cpus[0]?.model.trim() ?? "unknown CPU"}), ${(os.totalmem() / 1024 ** 3).toFixed(1)} GB memory, Node ${process.version}; code ${code}.`,
    "",
    `One ${KIND} snapshot job of the "base" table (12 columns) at ${thousands(r.rows)} rows, run as a Workflow instance in \`wrangler dev\``,
    `(POST /snapshots/<name>/run) against the zero-cost synthetic CKAN 2.12 (keyset paging), \`SNAPSHOT_STEP_BYTES\` ${config.stepBytes / MB} MiB,`,
    `\`SNAPSHOT_PART_BYTES\` ${config.partBytes / MB} MiB, ${HEAP_CAP === "" ? "no V8 heap cap (the worker's own heap is read over the inspector)" : `V8 flag \`${HEAP_CAP}\``}. CPU is that of the workerd process running the worker, which here also`,
    "runs the Workflow engine and wrangler dev's local R2 (JavaScript writing every part to disk; Cloudflare's R2 does that",
    `outside the worker), so it is an upper bound of what a step costs deployed. A step's CPU is the process's CPU (sampled every`,
    r.engineLog
      ? "100 ms) between the step's start and end as the local Workflow engine logged them (the progress poll, once a second, included)."
      : "100 ms) between the run record's updates the progress polls saw (once a second; the polls' own cost included).",
    ...(HEAP_CAP === ""
      ? [
          "",
          "With `--heap-cap 128` (every isolate of wrangler dev's workerd capped, as `npm run bench` does) workerd ran out of V8 heap during seal and publish at 20,000,000 rows, twice, when those steps still hashed and copied the whole file; the write steps ran under the cap.",
        ]
      : []),
    "",
    "| | |",
    "| --- | --- |",
    `| run | ${r.status}${r.error ? `: ${r.error}` : ""} |`,
    `| rows | ${thousands(r.rows)} |`,
    `| bytes (R2 object) | ${thousands(r.bytes)} (${gib(r.bytes)} GiB) |`,
    `| sha256 (manifest) | \`${r.sha256}\` |`,
    `| read back (GET latest.${FORMAT}) | ${thousands(r.readBack.bytes)} bytes, ${thousands(r.readBack.rows)} rows, sha256 ${r.readBack.whole ? "equal to the manifest's: the file is whole" : `\`${r.readBack.sha256}\`: NOT the manifest's`} |`,
    `| steps | ${r.steps} write steps, ${r.finishing.length} others (claim, begin, seal, publish, record, retention, release) |`,
    `| every other step within 2x the largest write step's CPU (${(2 * p.cpuMax).toFixed(2)} s) | ${r.finishing.every((f) => f.cpuS <= 2 * p.cpuMax) ? "yes" : "NO"}: the heaviest, "${r.finishing.reduce((x, y) => (y.cpuS > x.cpuS ? y : x)).label}", ${Math.max(...r.finishing.map((f) => f.cpuS)).toFixed(2)} s |`,
    `| wall time of the run | ${clock(r.wallS)} |`,
    `| workerd CPU, whole run | ${r.cpuTotal.toFixed(1)} s (${(r.cpuTotal / (r.rows / 1e6)).toFixed(2)} s per million rows) |`,
    `| workerd peak RSS (every isolate of wrangler dev) | ${r.peakMb.toFixed(0)} MB |`,
    `| the worker's V8 heap, the most seen (asked over the inspector once a second) | ${r.heapPeakMb.toFixed(0)} MB (${r.heapPeakIn}) |`,
    `| a write step (${(p.bytesMean / MB).toFixed(1)} MiB, ${thousands(Math.round(p.rowsMean))} rows on average) | CPU ${p.cpuMean.toFixed(2)} s mean, ${p.cpuMedian.toFixed(2)} s median, **${p.cpuMax.toFixed(2)} s the largest** (${p.cpuMaxLabel}); wall ${p.wallMean.toFixed(1)} s mean, ${p.wallMax.toFixed(1)} s the longest |`,
    ...r.finishing.map((f) => `| step "${f.label}" | CPU ${f.cpuS.toFixed(2)} s, wall ${f.wallS.toFixed(1)} s |`),
    `| between steps (the engine, the progress polls) | CPU ${r.betweenCpu.toFixed(1)} s in all |`,
    `| per-invocation CPU limit (Workers Paid default) | ${CPU_LIMIT_S} s: the largest write step used ${((p.cpuMax / CPU_LIMIT_S) * 100).toFixed(0)}% of it; the heaviest step, "${heaviest.label}", ${heaviest.cpuS.toFixed(2)} s (${((heaviest.cpuS / CPU_LIMIT_S) * 100).toFixed(0)}%), the local R2's share (JavaScript in the same process) not told apart |`,
    `| upstream | ${thousands(r.upstream.requests)} requests, ${gib(r.upstream.bytes)} GiB |`,
    "",
    `Every step (${r.missed > 0 ? `${r.missed} stretches held two steps or more: a step ended between two polls; ` : ""}name: MiB written, CPU s, wall s):`,
    "",
    `${segments
      .map((s) => `${s.label}: ${(s.bytes / MB).toFixed(0)} MiB, ${s.cpuS.toFixed(2)}, ${s.wallS.toFixed(1)}`)
      .join("; ")}.`,
  ];
  return lines.join("\n");
}

function gitDescribe(): string {
  try {
    return execFileSync("git", ["describe", "--always", "--dirty=+uncommitted changes"], {
      cwd: root,
      encoding: "utf8",
    })
      .trim()
      .replace("+", " + ");
  } catch {
    return "unknown"; // not a git checkout
  }
}

let upstreamRef: Upstream | undefined;
let workerRef: Wrangler | undefined;
let heapRef: HeapWatch | undefined;

const cleanUp = (): void => {
  killAllNow();
  rmSync(scratch, { recursive: true, force: true });
  try {
    rmdirSync(join(root, "bench", "tmp"));
  } catch {
    // Not empty, or already gone.
  }
};
process.on("exit", cleanUp);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => process.exit(130));

if (!existsSync(join(root, "node_modules", "wrangler"))) throw new Error("run npm ci first");
try {
  await main();
} catch (error) {
  console.error("bench:snapshot failed:", error);
  process.exitCode = 1;
} finally {
  heapRef?.stop();
  // What wrangler dev printed stays for a failure's post-mortem (machine paths cut out).
  if (workerRef !== undefined) {
    mkdirSync(join(root, "bench", "tmp"), { recursive: true });
    writeFileSync(
      join(root, "bench", "tmp", "snapshot-wrangler.log"),
      workerRef.output.map((l) => l.split(root).join("")).join("\n"),
    );
  }
  await workerRef?.stop();
  await upstreamRef?.close();
  cleanUp();
}
process.exit();
