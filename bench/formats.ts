// `npm run bench:formats`: Parquet against CSV, and gzip, for 1,000,000 rows of the bench's "base"
// table (bench/ckan/tables.ts) from a zero-cost upstream, each export in a fresh `wrangler dev`
// (the bundle built once, the 128 MB heap cap of `npm run bench`):
//   exports   /export.csv, /export.xlsx and /export.parquet: CPU and peak RSS of the worker's workerd,
//             bytes, wall
//   deflate   XLSX's deflate, its share and the choices: the sheet XML of the XLSX export (read back
//             with Info-ZIP's unzip) deflated in this Node process (the same zlib as workerd's) by
//             CompressionStream (zlib's default level, the only one it has), by node:zlib in 64 KiB
//             pieces at levels 1, 2, 4 and 6 (format/deflate.ts), and stored (CRC-32 alone)
//   gzip      what CompressionStream("gzip") costs in workerd: a second worker (bench/gzip-worker.ts)
//             reads the CSV, TSV, JSON and NDJSON exports through it and without it; the CPU
//             difference is gzip's own, the output its size
//   snapshots one job per kind run by POST /snapshots/<name>/run: each format's stored size, plain
//             and gzipped (the job's CPU is mostly wrangler dev's local R2, written in JavaScript)
//   node      CompressionStream("gzip") over the CSV export's bytes in this Node process, a check
// Writes bench/RESULTS-formats.md. Loopback only; every child is killed at the end.
//   FORMATS_ROWS (1000000)  FORMATS_REPEAT (2)  FORMATS_EXPORTS (csv,xlsx,parquet)
//   FORMATS_ONLY=exports: the exports and deflate sections alone (no gzip or snapshot jobs)
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import zlib from "node:zlib";
import { BlockDeflater, LEVEL } from "../src/format/deflate.ts";
import { BASE } from "./ckan/tables.ts";
import { download, sleep } from "./http.ts";
import { startUpstream, type Upstream } from "./upstream.ts";
import { benchVars, buildWorker, killAllNow, lastWords, sample, startWrangler, type Wrangler } from "./workerd.ts";

const ROWS = Number(process.env.FORMATS_ROWS ?? 1_000_000);
const REPEAT = Number(process.env.FORMATS_REPEAT ?? 2);
const EXPORTS = (process.env.FORMATS_EXPORTS ?? "csv,xlsx,parquet").split(",");
const ONLY_EXPORTS = process.env.FORMATS_ONLY === "exports";
const HEAP_CAP = "--max-old-space-size=128";
const ADMIN = "bench-admin-token";
const root = fileURLToPath(new URL("..", import.meta.url));
const scratch = join(root, "bench", "tmp", `formats-${process.pid}`);
const MB = 2 ** 20;
const id = "f0a40000-0000-4000-8000-000000000001";
const JOBS = [
  { name: "plain-csv", resource: "base", limit: ROWS, formats: ["csv"] },
  { name: "gzip-csv", resource: "base", limit: ROWS, formats: ["csv"], compress: "gzip" },
  { name: "gzip-text", resource: "base", limit: ROWS, formats: ["tsv", "json", "ndjson"], compress: "gzip" },
  { name: "plain-parquet", resource: "base", limit: ROWS, formats: ["parquet"] },
];

interface ExportRow {
  format: string;
  n: number;
  wallS: number;
  ttfbMs: number;
  bytes: number;
  cpuS: number;
  peakMb: number;
  baselineMb: number;
}

/** Waits until the process stops using CPU, so work after the response is counted. */
async function settle(pid: number): Promise<void> {
  for (let i = 0; i < 40; i++) {
    const before = sample(pid).cpuSeconds;
    await sleep(250);
    if (Number.isNaN(sample(pid).cpuSeconds) || sample(pid).cpuSeconds - before < 0.02) return;
  }
}

let serial = 0;
let built: { bundle: string; config: string } | undefined;
function fresh(up: Upstream, vars: Record<string, string> = {}): Promise<Wrangler> {
  const persistTo = join(scratch, `state-${++serial}`);
  mkdirSync(persistTo, { recursive: true });
  built ??= buildWorker(root, scratch);
  const all = benchVars(up.url, { base: id }, vars);
  return startWrangler({ root, ...built, vars: all, persistTo, v8Flags: HEAP_CAP });
}

/** One export in a fresh process; a failed one (a machine shared with other work) is tried once more. */
async function exportRun(up: Upstream, format: string, n: number, retry = true): Promise<ExportRow> {
  try {
    return await exportOnce(up, format, n);
  } catch (error) {
    if (!retry) throw error;
    console.error(`  ${String(error).slice(0, 400)}; trying once more`);
    return exportRun(up, format, n, false);
  }
}

/** The last XLSX export's bytes, for the deflate section. */
let workbook: Buffer[] = [];

async function exportOnce(up: Upstream, format: string, n: number): Promise<ExportRow> {
  const worker = await fresh(up);
  try {
    await settle(worker.workerPid);
    const baselineMb = sample(worker.workerPid).rssMb;
    const before = sample(worker.workerPid).cpuSeconds;
    const kept: Buffer[] = [];
    const keep = format === "xlsx" ? (chunk: Buffer) => void kept.push(chunk) : () => {};
    const d = await download(`${worker.url}/export.${format}?resource=base&limit=${ROWS}`, {}, () => keep);
    if (format === "xlsx") workbook = kept;
    if (d.status !== 200 || d.cutOff)
      throw new Error(
        `${format}: HTTP ${d.status} ${d.cutOff ?? ""} after ${d.bytes} bytes; worker: ${lastWords(worker, root, 6)}`,
      );
    await settle(worker.workerPid);
    const after = sample(worker.workerPid);
    const row = {
      format,
      n,
      wallS: d.wallMs / 1000,
      ttfbMs: d.ttfbMs,
      bytes: d.bytes,
      cpuS: after.cpuSeconds - before,
      peakMb: after.peakMb,
      baselineMb,
    };
    console.log(
      `  /export.${format} #${n}: ${row.wallS.toFixed(2)} s, ${(row.bytes / MB).toFixed(1)} MB, CPU ${row.cpuS.toFixed(2)} s, peak RSS ${row.peakMb.toFixed(0)} MB`,
    );
    return row;
  } finally {
    await worker.stop();
  }
}

interface Listed {
  bytes: number;
  encoding?: string;
  decoded_bytes?: number;
}

async function runEnded(worker: Wrangler, name: string): Promise<void> {
  for (;;) {
    const listing = (await (await fetch(`${worker.url}/snapshots`)).json()) as {
      jobs: { name: string; last_run: { status: string; error?: string } | null; running?: unknown }[];
    };
    const job = listing.jobs.find((j) => j.name === name);
    if (job?.last_run != null && !job.running) {
      if (job.last_run.status !== "ok") throw new Error(`snapshot ${name}: ${job.last_run.error ?? "failed"}`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

async function snapshotRuns(up: Upstream): Promise<{ cpu: Record<string, number>; sizes: Record<string, Listed> }> {
  const worker = await fresh(up, { ADMIN_TOKEN: ADMIN, SNAPSHOT_JOBS: JSON.stringify(JOBS) });
  const cpu: Record<string, number> = {};
  try {
    for (let round = 0; round < 1; round++) {
      for (const job of JOBS) {
        await settle(worker.workerPid);
        const before = sample(worker.workerPid).cpuSeconds;
        const res = await fetch(`${worker.url}/snapshots/${job.name}/run`, {
          method: "POST",
          headers: { authorization: `Bearer ${ADMIN}` },
        });
        const text = await res.text();
        if (res.status !== 200 && res.status !== 202)
          throw new Error(`snapshot ${job.name}: HTTP ${res.status} ${text.slice(0, 300)}`);
        // With the snapshot Workflow bound the run goes on in its instance (202): wait for its end.
        if (res.status === 202) await runEnded(worker, job.name);
        await settle(worker.workerPid);
        const used = sample(worker.workerPid).cpuSeconds - before;
        cpu[job.name] = used;
        console.log(`  snapshot ${job.name}: CPU ${used.toFixed(2)} s`);
      }
    }
    const listing = (await (await fetch(`${worker.url}/snapshots`)).json()) as {
      jobs: { name: string; latest: Record<string, Listed> }[];
    };
    const sizes: Record<string, Listed> = {};
    for (const job of listing.jobs)
      for (const [format, entry] of Object.entries(job.latest)) sizes[`${job.name}/${format}`] = entry;
    return { cpu, sizes };
  } finally {
    await worker.stop();
  }
}

interface GzipRow {
  format: string;
  input: number;
  output: number;
  plainCpuS: number;
  gzipCpuS: number;
}

/** Each text export read by the gzip worker with and without CompressionStream, best of two each. */
async function workerGzip(up: Upstream): Promise<GzipRow[]> {
  const exporter = await fresh(up);
  const persistTo = join(scratch, `state-${++serial}`);
  mkdirSync(persistTo, { recursive: true });
  const gzipper = await startWrangler({
    root,
    config: "bench/wrangler.gzip.toml",
    vars: { EXPORT_URL: exporter.url },
    persistTo,
  });
  const rows: GzipRow[] = [];
  try {
    for (const format of ["csv", "tsv", "json", "ndjson"]) {
      const cpu = { "0": Number.POSITIVE_INFINITY, "1": Number.POSITIVE_INFINITY };
      let sizes = { input: 0, output: 0 };
      for (let round = 0; round < 2; round++) {
        for (const compress of ["0", "1"] as const) {
          await settle(gzipper.workerPid);
          const before = sample(gzipper.workerPid).cpuSeconds;
          const path = encodeURIComponent(`/export.${format}?resource=base&limit=${ROWS}`);
          const res = await fetch(`${gzipper.url}/gzip?compress=${compress}&path=${path}`);
          const body = (await res.json()) as { input: number; output: number; error?: string };
          if (res.status !== 200) throw new Error(`gzip worker, ${format}: ${body.error ?? res.status}`);
          await settle(gzipper.workerPid);
          cpu[compress] = Math.min(cpu[compress], sample(gzipper.workerPid).cpuSeconds - before);
          if (compress === "1") sizes = body;
        }
      }
      const row = { format, input: sizes.input, output: sizes.output, plainCpuS: cpu["0"], gzipCpuS: cpu["1"] };
      console.log(
        `  gzip ${format} in workerd: ${(row.input / MB).toFixed(1)} -> ${(row.output / MB).toFixed(1)} MB, CPU ${row.plainCpuS.toFixed(2)} s read, ${row.gzipCpuS.toFixed(2)} s read and gzipped`,
      );
      rows.push(row);
    }
  } finally {
    await gzipper.stop();
    await exporter.stop();
  }
  return rows;
}

/** CompressionStream("gzip") over the CSV export's bytes, in this process: CPU seconds and output size. */
async function nodeGzip(up: Upstream): Promise<{ cpuS: number; inBytes: number; outBytes: number }> {
  const worker = await fresh(up);
  const chunks: Buffer[] = [];
  try {
    const d = await download(
      `${worker.url}/export.csv?resource=base&limit=${ROWS}`,
      {},
      () => (chunk) => void chunks.push(chunk),
    );
    if (d.status !== 200) throw new Error(`csv for gzip: HTTP ${d.status}`);
  } finally {
    await worker.stop();
  }
  let best = { cpuS: Number.POSITIVE_INFINITY, inBytes: 0, outBytes: 0 };
  for (let i = 0; i < 3; i++) {
    const start = process.cpuUsage();
    const source = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        controller.close();
      },
    });
    let outBytes = 0;
    const reader = source
      .pipeThrough(new CompressionStream("gzip") as unknown as ReadableWritablePair<Uint8Array, Uint8Array>)
      .getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      outBytes += value.byteLength;
    }
    const used = process.cpuUsage(start);
    const cpuS = (used.user + used.system) / 1e6;
    if (cpuS < best.cpuS) best = { cpuS, inBytes: chunks.reduce((n, c) => n + c.length, 0), outBytes };
  }
  console.log(
    `  node CompressionStream gzip: ${best.cpuS.toFixed(2)} s CPU, ${(best.inBytes / MB).toFixed(1)} -> ${(best.outBytes / MB).toFixed(1)} MB`,
  );
  return best;
}

const fixed = (n: number, d = 2): string => (Number.isFinite(n) ? n.toFixed(d) : "n/a");
const mb = (n: number): string => fixed(n / MB, 1);

function report(
  exports: ExportRow[],
  deflate: Awaited<ReturnType<typeof deflateWays>> | undefined,
  gzip: GzipRow[],
  snaps: Awaited<ReturnType<typeof snapshotRuns>>,
  node: Awaited<ReturnType<typeof nodeGzip>> | undefined,
  seconds: number,
): string {
  const per = ROWS / 1_000_000;
  const median = (format: string, pick: (r: ExportRow) => number): number => {
    const values = exports
      .filter((r) => r.format === format)
      .map(pick)
      .sort((a, b) => a - b);
    return values[Math.floor((values.length - 1) / 2)] ?? Number.NaN;
  };
  const csvBytes = median("csv", (r) => r.bytes);
  const lines = [
    "# Formats and gzip: benchmark results",
    "",
    `\`npm run bench:formats\`, ${new Date().toISOString().replace(/\.\d+Z$/, "Z")}. Machine: ${os.cpus().length} cores (${os.cpus()[0]?.model.trim() ?? "?"}), ${fixed(os.totalmem() / 2 ** 30, 1)} GB memory, Node ${process.version}. Whole run: ${fixed(seconds, 0)} s.`,
    "",
    `${ROWS.toLocaleString("en")} rows of the bench's "base" table (12 columns: int, numeric, float8, text, timestamp, bool, nulls) from the`,
    "zero-cost bench upstream as CKAN 2.10; each export in a fresh `wrangler dev` (workerd, the 128 MB heap cap of `npm run bench`,",
    'the edge cache off). CPU and peak RSS are the workerd process that runs the worker; "above idle" subtracts its RSS before the export.',
    "MB = MiB.",
    "",
    "## Exports",
    "",
    "| export | run | wall s | TTFB ms | MB | vs CSV | CPU s | peak RSS MB | above idle MB |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...exports.map(
      (r) =>
        `| /export.${r.format} | ${r.n} | ${fixed(r.wallS)} | ${fixed(r.ttfbMs, 0)} | ${mb(r.bytes)} | ${fixed(r.bytes / csvBytes)}x | ${fixed(r.cpuS)} | ${fixed(r.peakMb, 0)} | ${fixed(r.peakMb - r.baselineMb, 0)} |`,
    ),
    "",
    ...EXPORTS.filter((f) => f !== "csv").map(
      (f) =>
        `${f === "xlsx" ? "XLSX" : "Parquet"} costs ${fixed(median(f, (r) => r.cpuS) / median("csv", (r) => r.cpuS), 1)}x CSV's CPU (medians) and sends ${fixed((median(f, (r) => r.bytes) / csvBytes) * 100, 0)}% of its bytes.`,
    ),
    "",
    ...(deflate === undefined
      ? []
      : deflateSection(
          deflate,
          median("csv", (r) => r.cpuS),
        )),
    "## Snapshots, plain and gzipped",
    "",
    "Stored sizes from `GET /snapshots` (for gzip: `bytes` stored, `decoded_bytes` the export). A job's CPU here is mostly wrangler dev's local R2 (JavaScript in the same workerd process, storing and copying every byte), not the export or gzip: see the next table for gzip's own cost.",
    "",
    "| job | format | stored MB | decoded MB | stored / decoded | job CPU s |",
    "| --- | --- | --- | --- | --- | --- |",
    ...Object.entries(snaps.sizes).map(([key, e]) => {
      const [job = "", format = ""] = key.split("/");
      const decoded = e.decoded_bytes ?? e.bytes;
      return `| ${job} | ${format}${e.encoding ? ` (${e.encoding})` : ""} | ${mb(e.bytes)} | ${mb(decoded)} | ${fixed((e.bytes / decoded) * 100, 0)}% | ${fixed(snaps.cpu[job] ?? Number.NaN)} |`;
    }),
    "",
    "## What gzip costs a worker",
    "",
    'A second worker in workerd (bench/gzip-worker.ts) reads each export over loopback, once as it is and once through `CompressionStream("gzip")`; the difference is gzip\'s own CPU (best of two each).',
    "",
    "| export | MB | gzip MB | gzip / plain | CPU s read | CPU s read + gzip | gzip CPU s per million rows | ms per MB |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ...gzip.map(
      (g) =>
        `| /export.${g.format} | ${mb(g.input)} | ${mb(g.output)} | ${fixed((g.output / g.input) * 100, 0)}% | ${fixed(g.plainCpuS)} | ${fixed(g.gzipCpuS)} | ${fixed((g.gzipCpuS - g.plainCpuS) / per)} | ${fixed(((g.gzipCpuS - g.plainCpuS) / (g.input / MB)) * 1000, 1)} |`,
    ),
    "",
    node === undefined
      ? "- (gzip in Node not measured in this run)"
      : `- In Node, CompressionStream("gzip") alone over the same ${mb(node.inBytes)} MB of CSV: ${fixed(node.cpuS)} s CPU (${fixed(node.cpuS / per)} s per million rows), ${mb(node.outBytes)} MB out (${fixed((node.outBytes / node.inBytes) * 100, 0)}%).`,
    "- At Cloudflare's edge (a Compression Rule for text/csv, text/tab-separated-values, application/x-ndjson; JSON is compressed by default): none of the worker's CPU; it cannot be measured here.",
    "",
  ];
  return lines.join("\n");
}

interface DeflateRow {
  way: string;
  cpuS: number;
  bytes: number;
}

/** The sheet XML of the last XLSX export, as Info-ZIP's unzip reads it (its CRC-32 checked). */
function sheetXml(): Buffer {
  const file = join(scratch, "export.xlsx");
  writeFileSync(file, Buffer.concat(workbook));
  execFileSync("unzip", ["-tq", file]);
  return execFileSync("unzip", ["-p", file, "xl/worksheets/sheet1.xml"], { maxBuffer: 2 ** 31 });
}

/** CPU seconds of `run` (best of two) and what it gave. */
function timed(way: string, run: () => number): DeflateRow {
  let best = { way, cpuS: Number.POSITIVE_INFINITY, bytes: 0 };
  for (let i = 0; i < 2; i++) {
    const start = process.cpuUsage();
    const bytes = run();
    const used = process.cpuUsage(start);
    best = { way, cpuS: Math.min(best.cpuS, (used.user + used.system) / 1e6), bytes };
  }
  return best;
}

/** XLSX's deflate by each way it could be done, over the same sheet XML. */
async function deflateWays(): Promise<{ xmlBytes: number; rows: DeflateRow[] }> {
  const xml = sheetXml();
  const rows: DeflateRow[] = [];
  for (const level of [1, 2, 4, 6])
    rows.push(
      timed(`node:zlib, 64 KiB pieces, level ${level}${level === LEVEL.fast ? " (XLSX's)" : ""}`, () => {
        const deflater = new BlockDeflater(level);
        let out = 0;
        for (let at = 0; at < xml.length; at += MB) out += deflater.write(xml.subarray(at, at + MB)).byteLength;
        return out + deflater.end().byteLength;
      }),
    );
  rows.push(timed("stored: CRC-32 alone (zlib.crc32)", () => (zlib.crc32(xml), xml.length)));
  let best = { way: 'CompressionStream("deflate-raw"), zlib level 6', cpuS: Number.POSITIVE_INFINITY, bytes: 0 };
  for (let i = 0; i < 2; i++) {
    const start = process.cpuUsage();
    let bytes = 0;
    const reader = new Blob([new Uint8Array(xml)])
      .stream()
      .pipeThrough(new CompressionStream("deflate-raw") as unknown as ReadableWritablePair<Uint8Array, Uint8Array>)
      .getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) bytes += next.value.byteLength;
    const used = process.cpuUsage(start);
    best = { ...best, cpuS: Math.min(best.cpuS, (used.user + used.system) / 1e6), bytes };
  }
  rows.unshift(best);
  return { xmlBytes: xml.length, rows };
}

/** The deflate section: each way's CPU against the CSV export's, and its size. */
function deflateSection(d: Awaited<ReturnType<typeof deflateWays>>, csvCpuS: number): string[] {
  return [
    "## XLSX's deflate",
    "",
    `The XLSX export's sheet XML (${mb(d.xmlBytes)} MB, read back from the workbook with Info-ZIP's unzip) deflated in this Node process, which has workerd's zlib; best of two. "vs CSV" divides by the CSV export's CPU in workerd (median above).`,
    "",
    "| way | CPU s | vs CSV export | MB | of the XML |",
    "| --- | --- | --- | --- | --- |",
    ...d.rows.map(
      (r) =>
        `| ${r.way} | ${fixed(r.cpuS)} | ${fixed(r.cpuS / csvCpuS)}x | ${mb(r.bytes)} | ${fixed((r.bytes / d.xmlBytes) * 100, 1)}% |`,
    ),
    "",
  ];
}

const started = performance.now();
process.on("exit", killAllNow);
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => process.exit(130));
mkdirSync(scratch, { recursive: true });
const up = await startUpstream({ resources: [{ id, shape: BASE, rows: ROWS }], version: "2.10" });
try {
  console.log(`bench:formats, ${ROWS} rows`);
  const exports: ExportRow[] = [];
  for (let n = 1; n <= REPEAT; n++) for (const format of EXPORTS) exports.push(await exportRun(up, format, n));
  const deflate = EXPORTS.includes("xlsx") ? await deflateWays() : undefined;
  const gzip = ONLY_EXPORTS ? [] : await workerGzip(up);
  const snaps = ONLY_EXPORTS ? { sizes: {}, cpu: {} } : await snapshotRuns(up);
  const node = ONLY_EXPORTS ? undefined : await nodeGzip(up);
  const text = report(exports, deflate, gzip, snaps, node, (performance.now() - started) / 1000);
  writeFileSync(join(root, "bench", "RESULTS-formats.md"), text);
  console.log(`\nwrote bench/RESULTS-formats.md`);
} finally {
  await up.close();
  killAllNow();
  rmSync(scratch, { recursive: true, force: true });
}
