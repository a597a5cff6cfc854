// Turns measurements into the printed table, the target checks and bench/RESULTS.md.

export interface ExportResult {
  format: "csv" | "json";
  gzip: boolean;
  /** Run without the V8 heap cap the other exports have. */
  uncapped: boolean;
  rows: number;
  latencyMs: number;
  run: "cold" | "cached";
  status: number;
  wallMs: number;
  ttfbMs: number;
  bytes: number;
  /** Rows counted in the body (line count minus framing); a mismatch is a warning, not a failure. */
  rowsSeen: number;
  upstreamRequests: number;
  upstreamBytes: number;
  /** Pages the upstream had to serialise during this export (0 when all came from memory). */
  upstreamGenerated: number;
  /** Pages the worker asked for, per records_format. */
  recordsFormats: Record<string, number>;
  /** The upstream's summary of each request: status and parameters. */
  requestLog: string[];
  /** workerd (user worker) VmHWM after this run, MB: peak since the process started. */
  peakMb: number;
  /** workerd VmRSS before the first export in this process, MB. */
  baselineMb: number;
  cpuSeconds: number;
  proxyCpuSeconds: number;
  xCache: string;
  contentEncoding: string;
  /** The worker's X-Cache-Note, when it explains a MISS. */
  cacheNote?: string;
  /** Why the export failed or was cut off. */
  error?: string;
  /** upstream_ms from the worker's own log line, when it printed one. */
  workerUpstreamMs?: number;
}

export interface FetchFloor {
  rows: number;
  latencyMs: number;
  wallMs: number;
  firstPageMs: number;
  pages: number;
  upstreamBytes: number;
  /** CPU of the floor worker's process while it fetched and discarded the pages. */
  cpuSeconds: number;
}

export interface ParseFloor {
  rows: number;
  cpuSeconds: number;
  repeat: number;
}

export interface Machine {
  date: string;
  cores: number;
  cpuModel: string;
  memoryGb: number;
  node: string;
  workerd: string;
  wrangler: string;
  /** The commit measured (the worker is bundled from the working tree once per run). */
  code: string;
  /** Share of all cores that processes outside the benchmark used during it: mean and worst second. */
  otherLoad: { mean: number; worst: number };
  /** V8 flags of the export workers. */
  heapCap: string;
}

export interface Target {
  name: string;
  detail: string;
  met: boolean;
}

export interface Report {
  machine: Machine;
  exports: ExportResult[];
  fetchFloors: FetchFloor[];
  parseFloors: ParseFloor[];
  formats: { rows: number; listsBytes: number; objectsBytes: number; csvBytes: number };
  /** Peak RSS of cold CSV exports, one fresh process each. */
  memory: { rows: number; peaksMb: number[] }[];
  targets: Target[];
  notes: string[];
  totalSeconds: number;
}

const MB = 1024 * 1024;
const ok = (e: ExportResult): boolean => e.status === 200 && e.error === undefined;
const fixed = (n: number, digits: number): string => (Number.isFinite(n) ? n.toFixed(digits) : "-");
const thousands = (n: number): string => Math.round(n).toLocaleString("en-US");

export const fetchFloorFor = (report: Pick<Report, "fetchFloors">, rows: number, latencyMs: number): FetchFloor | undefined =>
  report.fetchFloors.find((f) => f.rows === rows && f.latencyMs === latencyMs);
export const parseFloorFor = (report: Pick<Report, "parseFloors">, rows: number): ParseFloor | undefined =>
  report.parseFloors.find((f) => f.rows === rows);

function markdownTable(header: string[], rows: string[][]): string {
  const line = (cells: string[]): string => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

function exportsTable(report: Report): string {
  const header = ["export", "rows", "lat ms", "run", "wall s", "TTFB ms", "rows/s", "MB/s", "out MB", "up req", "up MB", "peak RSS MB", "CPU s", "wall / fetch floor", "CPU / parse floor", "X-Cache"];
  const rows = report.exports.map((e) => {
    const fetchFloor = fetchFloorFor(report, e.rows, e.latencyMs);
    const parseFloor = parseFloorFor(report, e.rows);
    const seconds = e.wallMs / 1000;
    return [
      `/export.${e.format}${e.gzip ? (e.contentEncoding === "gzip" ? " (gzip)" : ` (gzip asked, ${e.contentEncoding} sent)`) : ""}${e.uncapped ? " (no heap cap)" : ""}${ok(e) ? "" : e.status === 200 ? " (CUT OFF)" : e.status === 0 ? " (NO ANSWER)" : ` (HTTP ${e.status})`}`,
      thousands(e.rows),
      String(e.latencyMs),
      e.run,
      fixed(seconds, 2),
      fixed(e.ttfbMs, 0),
      thousands(e.rowsSeen / seconds),
      fixed(e.bytes / MB / seconds, 1),
      fixed(e.bytes / MB, 1),
      String(e.upstreamRequests),
      fixed(e.upstreamBytes / MB, 1),
      fixed(e.peakMb, 0),
      fixed(e.cpuSeconds, 2),
      fetchFloor ? `${fixed(e.wallMs / fetchFloor.wallMs, 2)}x` : "-",
      parseFloor && parseFloor.cpuSeconds > 0 ? `${fixed(e.cpuSeconds / parseFloor.cpuSeconds, 2)}x` : "-",
      e.xCache,
    ];
  });
  return markdownTable(header, rows);
}

function floorsTable(report: Report): string {
  const header = ["rows", "lat ms", "pages", "up MB", "fetch-and-discard wall s", "fetch-and-discard CPU s", "first page ms", "JSON.parse CPU s"];
  const rows = report.fetchFloors.map((f) => {
    const parse = f.latencyMs === 0 ? parseFloorFor(report, f.rows) : undefined;
    return [
      thousands(f.rows),
      String(f.latencyMs),
      String(f.pages),
      fixed(f.upstreamBytes / MB, 1),
      fixed(f.wallMs / 1000, 2),
      fixed(f.cpuSeconds, 2),
      fixed(f.firstPageMs, 0),
      parse ? `${fixed(parse.cpuSeconds, 3)}${parse.repeat > 1 ? ` (mean of ${parse.repeat})` : ""}` : "-",
    ];
  });
  return markdownTable(header, rows);
}

export function render(report: Report): string {
  const m = report.machine;
  const f = report.formats;
  const saving = 1 - f.listsBytes / f.objectsBytes;
  return `# Benchmark results

\`npm run bench\`, ${m.date}. Machine: ${m.cores} cores (${m.cpuModel}), ${fixed(m.memoryGb, 1)} GB memory, Node ${m.node}, workerd ${m.workerd}, wrangler ${m.wrangler}. Whole run: ${fixed(report.totalSeconds, 0)} s. Other processes on the machine used ${fixed(m.otherLoad.mean * 100, 0)}% of its CPU during the run (worst second ${fixed(m.otherLoad.worst * 100, 0)}%)${m.otherLoad.mean > 0.1 ? ": **the figures below are noisy; rerun on a quiet machine**" : ""}.

Upstream: a synthetic CKAN 2.10 \`datastore_search\` on loopback, 1,000,000 rows of 12 columns (int, numeric,
float8, text with commas/quotes/non-ASCII, timestamp, bool, some nulls) plus \`_id\`; it answers
\`include_next_page\` with CKAN 2.10's 409, so the worker pages by offset. "lat" is a delay before every
upstream answer. The worker runs in \`wrangler dev\` (workerd), a fresh process per export size; "cold" is
the first export in that process, "cached" the identical request right after. RSS and CPU are those of the
workerd process that runs the worker (not wrangler's proxy). The worker is bundled once per run from the
working tree (${m.code}). Requests ask for no compression unless marked gzip. Export workers run with V8
flag \`${m.heapCap}\`, standing in for production's 128 MB isolate limit: wrangler dev sets none, and V8 then
grows its heap rather than collect garbage, so peak RSS would track V8's heap sizing instead of what the
worker keeps (rows marked "no heap cap" show that). MB = MiB.

## Exports

${exportsTable(report)}

## Floors (same pages, same runtime)

${floorsTable(report)}

Fetch-and-discard: a minimal worker fetches the export's pages one after another and reads each body.
JSON.parse: CPU of that worker's workerd process while it parses the same pages' text, already in memory.

## Upstream bytes by records_format (${thousands(f.rows)} rows, same pages, every column)

| lists | objects | lists saves | csv (for reference) |
| --- | --- | --- | --- |
| ${fixed(f.listsBytes / MB, 1)} MB | ${fixed(f.objectsBytes / MB, 1)} MB | ${fixed(saving * 100, 1)}% | ${fixed(f.csvBytes / MB, 1)} MB |

## Targets

${report.targets.map((t) => `- **${t.met ? "met" : "NOT met"}**: ${t.name}. ${t.detail}`).join("\n")}

## Notes

${report.notes.map((n) => `- ${n}`).join("\n")}
`;
}

type Measured = Pick<Report, "machine" | "exports" | "fetchFloors" | "parseFloors" | "formats" | "memory">;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length === 0 ? Number.NaN : sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** "409 lists 1000@0 +total +next_page; 200 csv 32000@1000 fields:12 x3": consecutive alike requests folded. */
function requestPattern(log: string[]): string {
  const parts: { text: string; count: number }[] = [];
  for (const entry of log) {
    const space = entry.indexOf(" ");
    let text = entry;
    try {
      const p = JSON.parse(entry.slice(space + 1)) as Record<string, unknown>;
      const flags = [p.include_total ? "+total" : "", p.include_next_page ? "+next_page" : "", Array.isArray(p.fields) ? `fields:${p.fields.length}` : ""].filter(Boolean);
      text = [entry.slice(0, space), String(p.records_format ?? "objects"), `limit ${String(p.limit ?? 100)}`, ...flags].join(" ");
    } catch {
      // Not a parsed request; shown as it is.
    }
    const last = parts.at(-1);
    if (last?.text === text) last.count++;
    else parts.push({ text, count: 1 });
  }
  return parts.map((p) => (p.count > 1 ? `${p.text} x${p.count}` : p.text)).join("; ");
}

/** The issue's targets, each with the figures it was judged on, and notes on where time goes. */
export function evaluateTargets(report: Measured): { targets: Target[]; notes: string[] } {
  const targets: Target[] = [];
  const notes: string[] = [];
  const find = (format: string, rows: number, latencyMs: number, run: string): ExportResult | undefined =>
    report.exports.find((e) => e.format === format && e.rows === rows && e.latencyMs === latencyMs && e.run === run && !e.gzip && !e.uncapped && ok(e));
  const missing = (name: string): void => void targets.push({ name, detail: "Not measured (an export failed; see the table).", met: false });
  const slow = Math.max(...report.exports.map((e) => e.latencyMs));

  const cpuName = "CPU of a 1,000,000-row CSV export <= 4x the JSON.parse floor";
  const csvMillion = find("csv", 1_000_000, 0, "cold");
  const parseMillion = parseFloorFor(report, 1_000_000);
  if (csvMillion && parseMillion) {
    const ratio = csvMillion.cpuSeconds / parseMillion.cpuSeconds;
    // How much of the export's CPU is only moving bytes: fetching the same pages and discarding them.
    const io = fetchFloorFor(report, 1_000_000, 0)?.cpuSeconds;
    const beyond = io === undefined ? "" : ` Fetching the same pages and discarding them costs ${fixed(io, 2)} s; the export's CPU beyond that is ${fixed((csvMillion.cpuSeconds - io) / parseMillion.cpuSeconds, 2)}x the floor.`;
    targets.push({ name: cpuName, detail: `${fixed(csvMillion.cpuSeconds, 2)} s vs floor ${fixed(parseMillion.cpuSeconds, 2)} s: ${fixed(ratio, 2)}x.${beyond}`, met: ratio <= 4 });
  } else missing(cpuName);

  for (const rows of [1_000_000, 100_000]) {
    const name = `With ${slow} ms/page, export wall time grows by at most half of what the latency adds to fetching the pages one at a time (${thousands(rows)} rows CSV)`;
    const [fast, late] = [find("csv", rows, 0, "cold"), find("csv", rows, slow, "cold")];
    const [floorFast, floorLate] = [fetchFloorFor(report, rows, 0), fetchFloorFor(report, rows, slow)];
    if (!fast || !late || !floorFast || !floorLate) {
      missing(name);
      continue;
    }
    const grew = late.wallMs - fast.wallMs;
    const budget = (floorLate.wallMs - floorFast.wallMs) / 2;
    targets.push({ name, detail: `export ${fixed(fast.wallMs / 1000, 2)} -> ${fixed(late.wallMs / 1000, 2)} s (+${fixed(grew / 1000, 2)} s); fetching one at a time ${fixed(floorFast.wallMs / 1000, 2)} -> ${fixed(floorLate.wallMs / 1000, 2)} s, so the budget is +${fixed(budget / 1000, 2)} s.`, met: grew <= budget });
  }

  for (const rows of [1_000_000, 100_000]) {
    const name = `TTFB within 1.5x the first upstream page's latency (${thousands(rows)} rows CSV, ${slow} ms/page)`;
    const e = find("csv", rows, slow, "cold");
    const floor = fetchFloorFor(report, rows, slow);
    if (!e || !floor) {
      missing(name);
      continue;
    }
    targets.push({ name, detail: `TTFB ${fixed(e.ttfbMs, 0)} ms; the first page takes ${fixed(floor.firstPageMs, 0)} ms to fetch (floor worker), so the limit is ${fixed(floor.firstPageMs * 1.5, 0)} ms.`, met: e.ttfbMs <= floor.firstPageMs * 1.5 });
  }

  const rssName = "Peak RSS at 1,000,000 rows within 32 MB of 500,000 rows (CSV, median of fresh processes)";
  const [half, million] = [500_000, 1_000_000].map((rows) => report.memory.find((m) => m.rows === rows));
  if (half && million && half.peaksMb.length > 0 && million.peaksMb.length > 0) {
    const grew = median(million.peaksMb) - median(half.peaksMb);
    const runs = (m: { peaksMb: number[] }): string => m.peaksMb.map((p) => fixed(p, 0)).join(", ");
    targets.push({ name: rssName, detail: `${fixed(median(half.peaksMb), 0)} MB (${runs(half)}) -> ${fixed(median(million.peaksMb), 0)} MB (${runs(million)}): ${grew >= 0 ? "+" : ""}${fixed(grew, 0)} MB; an idle workerd is about ${fixed(report.exports[0]?.baselineMb ?? Number.NaN, 0)} MB.`, met: grew <= 32 });
  } else missing(rssName);

  const cacheName = "Cached export: zero upstream requests and >= 20x faster than cold (100,000 rows CSV)";
  const [cold, cached] = [find("csv", 100_000, 0, "cold"), find("csv", 100_000, 0, "cached")];
  if (cold && cached) {
    const speedup = cold.wallMs / cached.wallMs;
    targets.push({ name: cacheName, detail: `repeat made ${cached.upstreamRequests} upstream requests (X-Cache: ${cached.xCache}); ${fixed(cold.wallMs / 1000, 2)} s cold vs ${fixed(cached.wallMs / 1000, 2)} s repeat: ${fixed(speedup, 1)}x.`, met: cached.upstreamRequests === 0 && speedup >= 20 });
  } else missing(cacheName);

  const f = report.formats;
  const saving = 1 - f.listsBytes / f.objectsBytes;
  targets.push({ name: "records_format lists >= 30% fewer bytes than objects", detail: `${fixed(f.listsBytes / MB, 1)} MB vs ${fixed(f.objectsBytes / MB, 1)} MB for ${thousands(f.rows)} rows: ${fixed(saving * 100, 1)}% fewer.`, met: saving >= 0.3 });

  // Where time goes.
  const probed = (e: ExportResult): boolean => e.requestLog.some((l) => l.startsWith("409 ") && l.includes("include_next_page"));
  const colds = report.exports.filter((e) => e.run === "cold" && ok(e));
  if (colds.length > 0 && colds.every(probed)) {
    notes.push("Every cold export sent an `include_next_page` request, which this CKAN 2.10 upstream answers 409; the worker learns that per isolate, so the repeats in the same process did not ask again. Compare cold and repeat TTFB for what first contact costs.");
  }
  for (const e of report.exports.filter((x) => x.run === "cold" && x.rows === 1_000_000 && ok(x))) {
    const parts = [`workerd CPU ${fixed(e.cpuSeconds, 2)} s of ${fixed(e.wallMs / 1000, 2)} s wall`, `wrangler's proxy workerd ${fixed(e.proxyCpuSeconds, 2)} s`];
    if (e.workerUpstreamMs !== undefined) parts.push(`the worker's log: ${fixed(e.workerUpstreamMs / 1000, 2)} s in upstream calls (summed; calls overlap encoding and each other)`);
    notes.push(`${thousands(e.rows)} rows ${e.format.toUpperCase()}${e.gzip ? " gzip" : ""}${e.uncapped ? " (no heap cap)" : ""} at ${e.latencyMs} ms/page: ${parts.join("; ")}.`);
  }
  const sampleExport = report.exports.find((e) => e.rows === 1_000_000 && e.run === "cold" && !e.gzip && ok(e));
  if (sampleExport) {
    const right = sampleExport.cpuSeconds > sampleExport.proxyCpuSeconds;
    notes.push(`Process check: the workerd started with \`--socket-addr=entry=127.0.0.1:0\` is the user worker: it used ${fixed(sampleExport.cpuSeconds, 2)} s CPU in a 1,000,000-row export against ${fixed(sampleExport.proxyCpuSeconds, 2)} s for the one on the public port${right ? "" : " (UNEXPECTED: the proxy used more; RSS/CPU figures may be of the wrong process)"}.`);
  }
  const repeats = report.exports.filter((x) => x.run === "cached" && ok(x));
  if (repeats.length > 0 && repeats.every((e) => e.xCache === "absent" && e.upstreamRequests > 0)) {
    notes.push("No X-Cache header on any repeat and every repeat refetched from upstream: there is no edge cache yet, so \"cached\" rows are a second, warm export.");
  }
  for (const e of report.exports.filter((x) => x.run === "cold" && x.rows === 100_000 && x.latencyMs === 0 && !x.gzip)) {
    notes.push(`Upstream requests of a cold 100,000-row ${e.format.toUpperCase()} export (status, records_format, limit, extras): ${requestPattern(e.requestLog)}.`);
  }
  const generated = report.exports.filter((x) => x.upstreamGenerated > 0);
  if (generated.length > 0) {
    notes.push(`The upstream had to serialise pages during: ${generated.map((e) => `${e.format} ${thousands(e.rows)} ${e.run} (${e.upstreamGenerated} pages)`).join(", ")}; those wall times include that upstream work.`);
  }
  const reasons = new Map<string, Set<string>>();
  for (const e of report.exports.filter((x) => x.cacheNote !== undefined)) {
    const which = reasons.get(e.cacheNote!) ?? new Set<string>();
    which.add(`${e.format.toUpperCase()} ${thousands(e.rows)}`);
    reasons.set(e.cacheNote!, which);
  }
  for (const [reason, which] of reasons) notes.push(`X-Cache-Note "${reason}" on: ${[...which].join(", ")} (cold and repeat).`);
  const [uncappedHalf, uncappedMillion] = [500_000, 1_000_000].map((rows) => report.exports.find((e) => e.uncapped && e.rows === rows && e.run === "cold" && ok(e)));
  if (uncappedHalf && uncappedMillion) {
    const [half, million] = [500_000, 1_000_000].map((rows) => median(report.memory.find((m) => m.rows === rows)?.peaksMb ?? []));
    const flat = million! - half! <= 32;
    notes.push(`Without the heap cap (wrangler dev's default) a cold CSV export peaks at ${fixed(uncappedHalf.peakMb, 0)} MB for 500,000 rows and ${fixed(uncappedMillion.peakMb, 0)} MB for 1,000,000; with it (median), ${fixed(half!, 0)} and ${fixed(million!, 0)} MB${flat ? ", so the growth without it is garbage V8 had not collected, not rows the worker keeps" : ""}.`);
  }
  const zipped = report.exports.find((e) => e.gzip && e.run === "cold" && ok(e));
  const plain = zipped && find(zipped.format, zipped.rows, zipped.latencyMs, "cold");
  if (zipped && plain) {
    const what = `${thousands(zipped.rows)}-row ${zipped.format.toUpperCase()} export`;
    if (zipped.contentEncoding !== "gzip") {
      notes.push(`Asked for gzip (Accept-Encoding: gzip), the ${what} came back ${zipped.contentEncoding}.`);
    } else {
      notes.push(`Asking for gzip (as browsers do) changes a ${what} from ${fixed(plain.cpuSeconds, 2)} s CPU, ${fixed(plain.wallMs / 1000, 2)} s wall, ${fixed(plain.bytes / MB, 0)} MB, peak RSS ${fixed(plain.peakMb, 0)} MB to ${fixed(zipped.cpuSeconds, 2)} s CPU (wrangler's proxy ${fixed(zipped.proxyCpuSeconds, 2)} s), ${fixed(zipped.wallMs / 1000, 2)} s wall, ${fixed(zipped.bytes / MB, 0)} MB on the wire, peak RSS ${fixed(zipped.peakMb, 0)} MB. Every other row is measured without Accept-Encoding.`);
    }
  }
  const mismatched = report.exports.filter((e) => ok(e) && e.rowsSeen !== e.rows);
  if (mismatched.length > 0) notes.push(`Row count mismatch in: ${mismatched.map((e) => `${e.format} ${e.rows} ${e.run} (${e.rowsSeen})`).join(", ")}.`);
  for (const e of report.exports.filter((x) => !ok(x))) {
    notes.push(`FAILED: ${e.format}${e.gzip ? " gzip" : ""} ${thousands(e.rows)} rows, ${e.latencyMs} ms/page, ${e.run}: ${e.error ?? `HTTP ${e.status}`}.`);
  }
  return { targets, notes };
}
