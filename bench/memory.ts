// Memory as the isolate holds it: each format's export, and four at once, in `wrangler dev` with
// V8's heap capped, sampled over the inspector (bench/inspector.ts) every few milliseconds while it
// runs. `npm run bench:memory` alone, or the "memory" part of `npm run bench` (its report includes
// the table). A fresh worker process per run, so no run inherits another's heap or garbage.
//   MEMORY_ROWS (1000000)  MEMORY_FORMATS (csv,tsv,json,ndjson,xlsx,parquet)  MEMORY_CKAN=2.12|2.10 (2.12)
//   MEMORY_ONLY=cpu: only the formats' CPU in turns (csv with xlsx or parquet)
//   MEMORY_CAPS: the small heap every format must complete in (48), MB
// V8 collects lazily: a format that allocates a JavaScript value per cell (Parquet reads rows) shows a
// peak heap mostly of garbage. So each format runs once more under the small cap with a full
// collection forced every LIVE_EVERY_MS: its "live heap" column, what the isolate holds at its fullest.
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { download, lineCounter } from "./http.ts";
import { heapSampler, type HeapPeak } from "./inspector.ts";
import { BASE } from "./ckan/tables.ts";
import { startUpstream, type Upstream, type Version } from "./upstream.ts";
import { benchVars, buildWorker, killAllNow, sample, settle, startWrangler, type Wrangler } from "./workerd.ts";

export type MemoryFormat = "csv" | "tsv" | "json" | "ndjson" | "xlsx" | "parquet";

export interface MemoryRow {
  /** One format, or several at once ("csv+json+xlsx+ndjson"). */
  formats: MemoryFormat[];
  rows: number;
  /** V8's --max-old-space-size, MB. */
  heapCapMb: number;
  /** "ok", "died" (the isolate reached its heap limit or its process went), or what else went wrong. */
  outcome: string;
  peak: HeapPeak;
  cpuSeconds: number;
  /** The workerd process's peak RSS (VmHWM), MB: the runtime's own memory too. */
  rssMb: number;
  seconds: number;
  /**
   * Exports run for CPU alone, without the heap sampler (`cpuRuns`): each one's CPU seconds,
   * `cpuSeconds` their median; `peak` is then empty.
   */
  cpuOnly?: number[];
}

const MB = 1024 * 1024;
const QUARTER = 4;
/** How often the live-heap run forces a collection, ms: a few dozen times in a run of 1,000,000 rows. */
const LIVE_EVERY_MS = 100;

/** Whether a body ended as a whole file: lines counted for text formats, the ZIP's end record for XLSX, Parquet's closing magic. */
function completeness(format: MemoryFormat): { write(chunk: Buffer): void; complete(rows: number): Promise<boolean> } {
  if (format === "parquet") {
    let tail = Buffer.alloc(0);
    return {
      write: (chunk) => void (tail = Buffer.concat([tail, chunk]).subarray(-8)),
      complete: async () => tail.length === 8 && tail.subarray(4).toString("latin1") === "PAR1",
    };
  }
  if (format === "xlsx") {
    let tail = Buffer.alloc(0);
    return {
      write: (chunk) => void (tail = Buffer.concat([tail, chunk]).subarray(-64)),
      // The end of central directory record, 22 bytes from the end (no comment).
      complete: async () => tail.length >= 22 && tail.readUInt32LE(tail.length - 22) === 0x06054b50,
    };
  }
  const lines = lineCounter(false);
  // CSV/TSV: a header line; JSON: the "[" and "]" lines; NDJSON: none.
  const framing = format === "json" ? 2 : format === "ndjson" ? 0 : 1;
  return { write: lines.write, complete: async (rows) => (await lines.count()) - framing === rows };
}

const heapDied = (lines: string[]): boolean =>
  lines.some((l) => /heap limit|out of memory|exceeded its memory limit/i.test(l));

/** Exports `formats` at once (each `rows` rows of the resource), sampling the isolate throughout. */
async function runOnce(
  worker: Wrangler,
  formats: MemoryFormat[],
  rows: number,
  heapCapMb: number,
  liveEveryMs = 0,
): Promise<MemoryRow> {
  const sampler = await heapSampler(worker.inspectorPort, 5, liveEveryMs);
  try {
    await settle(worker.workerPid);
    const from = worker.output.length;
    const cpuBefore = sample(worker.workerPid).cpuSeconds;
    const begun = performance.now();
    await sampler.start();
    const results = await Promise.all(
      formats.map(async (format, i) => {
        const check = completeness(format);
        // Exports at once come from as many clients: one client may run only 3 (MAX_EXPORTS_PER_CLIENT).
        const client = { "cf-connecting-ip": `198.51.100.${i + 1}` };
        const d = await download(
          `${worker.url}/export.${format}?resource=base&limit=${rows}`,
          client,
          () => check.write,
        );
        return { format, d, complete: d.status === 200 && d.cutOff === undefined && (await check.complete(rows)) };
      }),
    );
    const seconds = (performance.now() - begun) / 1000;
    const peak = await sampler.stop();
    await settle(worker.workerPid);
    const after = sample(worker.workerPid);
    const said = worker.output.slice(from);
    const died = Number.isNaN(after.cpuSeconds) || heapDied(said);
    const failed = results.filter((r) => !r.complete);
    let outcome = "ok";
    if (died) outcome = "died";
    else if (failed.length > 0)
      outcome = failed
        .map(
          (r) =>
            `${r.format}: HTTP ${r.d.status}${r.d.cutOff ? ` cut off after ${r.d.bytes} bytes` : ""} ${r.d.tail.slice(-120).replace(/\s+/g, " ")}`,
        )
        .join("; ");
    if (died || failed.length > 0) {
      const last = said
        .filter((l) => !l.startsWith("[wrangler:info]"))
        .slice(-3)
        .map((l) => l.slice(0, 200));
      console.error(
        `    ${formats.join("+")} ${rows}: ${outcome}${last.length ? `; worker said: ${last.join(" | ")}` : ""}`,
      );
    }
    return {
      formats,
      rows,
      heapCapMb,
      outcome,
      peak,
      cpuSeconds: after.cpuSeconds - cpuBefore,
      rssMb: after.peakMb,
      seconds,
    };
  } finally {
    sampler.close();
  }
}

export interface MemoryOptions {
  rows: number;
  formats: MemoryFormat[];
  /** The small heap every format must complete in, MB. */
  smallCapMb: number;
  /** Four formats at once under the 128 MB cap. */
  together: MemoryFormat[];
}

export const memoryDefaults = (): MemoryOptions => ({
  rows: Number(process.env.MEMORY_ROWS ?? 1_000_000),
  formats: (process.env.MEMORY_FORMATS?.split(",") ?? [
    "csv",
    "tsv",
    "json",
    "ndjson",
    "xlsx",
    "parquet",
  ]) as MemoryFormat[],
  smallCapMb: Number(process.env.MEMORY_CAP ?? 48),
  together: ["csv", "json", "xlsx", "ndjson"],
});

/** MEMORY_ONLY=cpu: the CPU rounds alone (`cpuRuns`), a minute or two, for comparing a change's CPU. */
const cpuOnly = process.env.MEMORY_ONLY === "cpu";

/**
 * Per format: a quarter of the rows and all of them under the 128 MB cap, then all of them under
 * the small cap; then the four formats at once under 128 MB. `start` gives a fresh worker serving
 * the table as "base" (with at least `rows` rows) under the V8 flags it is given.
 */
export async function memoryRuns(
  start: (v8Flags: string) => Promise<Wrangler>,
  up: Upstream,
  options: MemoryOptions,
): Promise<MemoryRow[]> {
  up.version = (process.env.MEMORY_CKAN ?? "2.12") as Version;
  up.model = undefined;
  // Every page shape these exports ask for, serialised before anything is measured.
  const warm = await start("");
  try {
    for (const format of new Set([...options.formats, ...options.together]))
      await download(`${warm.url}/export.${format}?resource=base&limit=70000`, {}, () => () => {});
  } finally {
    await warm.stop();
  }
  up.store.prepareSeen();
  console.log(
    `bench:memory: ${options.rows.toLocaleString("en-US")} rows, CKAN ${up.version}, a fresh wrangler dev per run`,
  );
  const rowsOut: MemoryRow[] = [];
  const one = async (formats: MemoryFormat[], rows: number, capMb: number, liveEveryMs = 0): Promise<void> => {
    const worker = await start(`--max-old-space-size=${capMb}`);
    try {
      const row = await runOnce(worker, formats, rows, capMb, liveEveryMs);
      rowsOut.push(row);
      const p = row.peak;
      console.log(
        `  ${formats.join("+")} ${rows} rows, heap cap ${capMb} MB: ${row.outcome === "ok" ? "ok" : row.outcome.slice(0, 80)}, peak heap ${(p.heap / MB).toFixed(1)} MB, ` +
          `${p.live === undefined ? "" : `live heap ${(p.live / MB).toFixed(1)} MB, `}ArrayBuffers ${(p.arrayBuffers / MB).toFixed(1)} MB (${p.samples} samples), CPU ${row.cpuSeconds.toFixed(2)} s, RSS ${row.rssMb.toFixed(0)} MB, ${row.seconds.toFixed(1)} s`,
      );
    } finally {
      await worker.stop();
    }
  };
  for (const format of cpuOnly ? [] : options.formats) {
    await one([format], Math.round(options.rows / QUARTER), 128);
    await one([format], options.rows, 128);
    await one([format], options.rows, options.smallCapMb);
    await one([format], options.rows, options.smallCapMb, LIVE_EVERY_MS);
  }
  if (!cpuOnly) await one(options.together, options.rows, 128);
  const heavy = (["csv", "xlsx", "parquet"] as const).filter((f) => options.formats.includes(f));
  if (heavy.length > 1) rowsOut.push(...(await cpuRuns(await start("--max-old-space-size=128"), heavy, options.rows)));
  return rowsOut;
}

/** Rounds of `cpuRuns`: each format's CPU is the median of this many exports. */
const CPU_RUNS = 5;

/**
 * Each format's CPU for `rows` rows in one worker, after a small export of each compiled its code,
 * with no heap sampler: the sampler's inspector calls cost the worker CPU for as long as an export
 * runs, so they weigh on the slower formats and swell their ratio to CSV's (runs of one, before:
 * XLSX 2.6x to 3.3x of CSV, Parquet 2.2x to 3.4x). The formats take turns, CPU_RUNS rounds of one
 * export each: a machine that slows for a while slows every format's runs alike, where runs of one
 * format after another put CSV's 1.0 s and XLSX's 3.4 s in different minutes (CSV from 0.89 to
 * 1.50 s in one evening). A format's ratio to CSV is the median of its rounds' ratios (`ratioToCsv`).
 */
async function cpuRuns(worker: Wrangler, formats: MemoryFormat[], rows: number): Promise<MemoryRow[]> {
  const runs = new Map<MemoryFormat, number[]>(formats.map((f) => [f, []]));
  const begun = performance.now();
  let rssMb = 0;
  try {
    for (const format of formats)
      await download(`${worker.url}/export.${format}?resource=base&limit=70000`, {}, () => () => {});
    for (let k = 0; k < CPU_RUNS; k++) {
      for (const format of formats) {
        await settle(worker.workerPid);
        const before = sample(worker.workerPid).cpuSeconds;
        const check = completeness(format);
        const d = await download(`${worker.url}/export.${format}?resource=base&limit=${rows}`, {}, () => check.write);
        await settle(worker.workerPid);
        if (d.status !== 200 || d.cutOff !== undefined || !(await check.complete(rows)))
          throw new Error(`bench:memory: the ${format} export for CPU did not complete (HTTP ${d.status})`);
        runs.get(format)!.push(sample(worker.workerPid).cpuSeconds - before);
      }
    }
    rssMb = sample(worker.workerPid).peakMb;
  } finally {
    await worker.stop();
  }
  return formats.map((format) => {
    const each = runs.get(format)!;
    console.log(`  ${format} ${rows} rows for CPU alone: ${each.map((r) => r.toFixed(2)).join(", ")} s`);
    return {
      formats: [format],
      rows,
      heapCapMb: 128,
      outcome: "ok",
      peak: { heap: 0, arrayBuffers: 0, total: 0, samples: 0 },
      cpuSeconds: median(each),
      rssMb,
      seconds: (performance.now() - begun) / 1000 / CPU_RUNS / formats.length,
      cpuOnly: each,
    };
  });
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** A format's CPU against CSV's: the median of round-by-round ratios where both ran in turns (`cpuRuns`), else of medians. */
function ratioToCsv(heavy: MemoryRow, csv: MemoryRow): number {
  const [a, b] = [heavy.cpuOnly, csv.cpuOnly];
  if (a === undefined || b === undefined || a.length !== b.length) return heavy.cpuSeconds / csv.cpuSeconds;
  return median(a.map((cpu, k) => cpu / b[k]!));
}

const mb = (bytes: number): string => (bytes / MB).toFixed(1);

/** Rows in the Paid plan's default 30 s of CPU per invocation, at a run's rows per CPU-second. */
const rowsIn30s = (r: MemoryRow): string =>
  (Math.round(((r.rows / r.cpuSeconds) * 30) / 10_000) * 10_000).toLocaleString("en-US");

/** The memory table (markdown), CPU relative to CSV's of the same rows and cap; then CPU alone (`cpuRuns`). */
export function renderMemory(all: MemoryRow[]): string {
  const alone = all.filter((r) => r.cpuOnly !== undefined);
  const sampled = renderSampled(all.filter((r) => r.cpuOnly === undefined));
  if (alone.length === 0) return sampled;
  const csv = alone.find((r) => r.formats[0] === "csv");
  const lines = alone.map(
    (r) =>
      `| ${r.formats[0]} | ${r.rows.toLocaleString("en-US")} | ${r.cpuSeconds.toFixed(2)} | ${r.cpuOnly!.map((c) => c.toFixed(2)).join(", ")} | ${csv === undefined ? "-" : `${ratioToCsv(r, csv).toFixed(1)}x`} | ${rowsIn30s(r)} |`,
  );
  return `${sampled}

CPU alone: each format exported ${CPU_RUNS} times in one worker after a small export, the formats in turns (one export of each a round), no heap sampler (its inspector calls cost CPU for as long as an export runs): the median, and against CSV the median of the rounds' ratios:

| format | rows | CPU s (median) | each run s | CPU / CSV | rows in 30 s of CPU |
| --- | --- | --- | --- | --- | --- |
${lines.join("\n")}`;
}

function renderSampled(rows: MemoryRow[]): string {
  const csvCpu = (r: MemoryRow): number | undefined =>
    rows.find(
      (c) =>
        c.formats.length === 1 &&
        c.formats[0] === "csv" &&
        c.rows === r.rows &&
        c.heapCapMb === r.heapCapMb &&
        c.peak.live === undefined &&
        c.outcome === "ok",
    )?.cpuSeconds;
  const line = (cells: string[]): string => `| ${cells.join(" | ")} |`;
  const header = [
    "format",
    "rows",
    "heap cap",
    "outcome",
    "peak heap MB",
    "live heap MB (forced collections)",
    "peak ArrayBuffers MB",
    "heap + ArrayBuffers MB",
    "CPU s",
    "CPU / CSV",
    "rows in 30 s of CPU",
    "peak RSS MB",
    "samples",
  ];
  const body = rows.map((r) => {
    const base = csvCpu(r);
    // A run with forced collections spends CPU on them: its CPU compares with nothing.
    const comparable = r.formats.length === 1 && r.outcome === "ok" && r.peak.live === undefined;
    const relative = comparable && base !== undefined ? `${(r.cpuSeconds / base).toFixed(1)}x` : "-";
    return line([
      r.formats.join(" + "),
      r.rows.toLocaleString("en-US") + (r.formats.length > 1 ? " each" : ""),
      `${r.heapCapMb} MB`,
      r.outcome === "ok"
        ? "ok"
        : r.outcome === "died"
          ? "**died**"
          : `**failed**: ${r.outcome.slice(0, 120).replace(/\|/g, "/")}`,
      mb(r.peak.heap),
      r.peak.live === undefined ? "-" : mb(r.peak.live),
      mb(r.peak.arrayBuffers),
      mb(r.peak.total),
      r.cpuSeconds.toFixed(2),
      relative,
      comparable ? rowsIn30s(r) : "-",
      r.rssMb.toFixed(0),
      String(r.peak.samples),
    ]);
  });
  return [line(header), line(header.map(() => "---")), ...body].join("\n");
}

/** Issue 19's memory and CPU targets, judged on the table's rows. */
export function memoryTargets(rows: MemoryRow[]): { name: string; detail: string; met: boolean }[] {
  const targets: { name: string; detail: string; met: boolean }[] = [];
  const single = rows.filter((r) => r.formats.length === 1 && r.cpuOnly === undefined);
  const all = Math.max(...single.map((r) => r.rows));
  const small = single.filter((r) => r.rows === all && r.heapCapMb < 128);
  if (small.length > 0) {
    const died = small.filter((r) => r.outcome !== "ok");
    targets.push({
      name: `every format completes ${all.toLocaleString("en-US")} rows with the heap capped at ${small[0]!.heapCapMb} MB`,
      detail:
        died.length === 0
          ? `${small.map((r) => r.formats[0]).join(", ")} completed.`
          : `failed: ${died.map((r) => `${r.formats[0]} (${r.outcome.slice(0, 60)})`).join(", ")}.`,
      met: died.length === 0,
    });
  }
  const capped = single.filter((r) => r.heapCapMb === 128);
  for (const format of new Set(capped.map((r) => r.formats[0]!))) {
    const quarter = capped.find((r) => r.formats[0] === format && r.rows < all);
    const whole = capped.find((r) => r.formats[0] === format && r.rows === all);
    if (!quarter || !whole) continue;
    const peak = Math.max(quarter.peak.arrayBuffers, whole.peak.arrayBuffers);
    const growth = whole.peak.arrayBuffers - quarter.peak.arrayBuffers;
    targets.push({
      name: `${format}: ArrayBuffers peak <= 32 MB, within 4 MB from a quarter of the rows to all`,
      detail: `${mb(quarter.peak.arrayBuffers)} MB at ${quarter.rows.toLocaleString("en-US")} rows, ${mb(whole.peak.arrayBuffers)} MB at ${whole.rows.toLocaleString("en-US")}${whole.outcome === "ok" && quarter.outcome === "ok" ? "" : " (an export failed)"}.`,
      met: peak <= 32 * MB && growth <= 4 * MB && whole.outcome === "ok" && quarter.outcome === "ok",
    });
  }
  const live = small.filter((r) => r.peak.live !== undefined);
  if (live.length > 0) {
    const cap = live[0]!.heapCapMb;
    targets.push({
      name: `every format's live heap (after a forced collection) stays within ${cap} MB`,
      detail: `${live.map((r) => `${r.formats[0]} ${mb(r.peak.live!)} MB`).join(", ")}.`,
      met: live.every((r) => r.outcome === "ok" && r.peak.live! <= cap * MB),
    });
  }
  const together = rows.find((r) => r.formats.length > 1);
  if (together) {
    targets.push({
      name: `${together.formats.join(", ")} at once complete under the 128 MB heap cap, ArrayBuffers peaking <= 64 MB`,
      detail: `${together.outcome}; ArrayBuffers ${mb(together.peak.arrayBuffers)} MB, heap ${mb(together.peak.heap)} MB.`,
      met: together.outcome === "ok" && together.peak.arrayBuffers <= 64 * MB,
    });
  }
  // CPU alone where it was measured (`cpuRuns`), else the sampled runs'.
  const alone = rows.filter((r) => r.cpuOnly !== undefined);
  const timed = alone.length > 0 ? alone : capped;
  const csv = timed.find((r) => r.formats[0] === "csv" && r.rows === all && r.outcome === "ok");
  for (const format of ["xlsx", "parquet"] as const) {
    const heavy = timed.find((r) => r.formats[0] === format && r.rows === all && r.outcome === "ok");
    if (!csv || !heavy) continue;
    const ratio = ratioToCsv(heavy, csv);
    const how =
      heavy.cpuOnly === undefined
        ? ""
        : ` (medians of ${CPU_RUNS}, no heap sampler; the ratio the median of ${CPU_RUNS} rounds' ratios, the formats in turns)`;
    targets.push({
      name: `${format === "xlsx" ? "XLSX" : "Parquet"} CPU <= 3x CSV's for the same rows`,
      detail: `${heavy.cpuSeconds.toFixed(2)} s vs ${csv.cpuSeconds.toFixed(2)} s${how}: ${ratio.toFixed(2)}x.`,
      met: ratio <= 3,
    });
  }
  return targets;
}

const MEMORY_ID = "3e3e0000-0000-4000-8000-000000000001";

/** `npm run bench:memory`: its own upstream and build. */
async function main(): Promise<void> {
  const options = memoryDefaults();
  const root = fileURLToPath(new URL("..", import.meta.url));
  const scratch = join(root, "bench", "tmp", `memory-${process.pid}`);
  mkdirSync(scratch, { recursive: true });
  let up: Upstream | undefined;
  try {
    up = await startUpstream({ resources: [{ id: MEMORY_ID, shape: BASE, rows: options.rows }] });
    const built = buildWorker(root, scratch);
    let serial = 0;
    const upstream = up;
    const start = (v8Flags: string): Promise<Wrangler> => {
      const persistTo = join(scratch, `state-${++serial}`);
      const vars = benchVars(upstream.url, { base: MEMORY_ID });
      return startWrangler({ root, ...built, vars, persistTo, v8Flags });
    };
    const rows = await memoryRuns(start, upstream, options);
    console.log(`\n${renderMemory(rows)}\n`);
    for (const t of cpuOnly ? [] : memoryTargets(rows))
      console.log(`- ${t.met ? "met" : "NOT met"}: ${t.name}. ${t.detail}`);
  } finally {
    await up?.close();
    killAllNow();
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    await main();
  } catch (error) {
    console.error("bench:memory failed:", error);
    process.exitCode = 1;
  }
  process.exit();
}
