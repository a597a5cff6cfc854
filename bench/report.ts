// The measurements' types, and bench/RESULTS.md rendered from them (targets: bench/targets.ts).
import type { CheckRow, CoresRow } from "./calibrate.ts";
import { describeModel } from "./calibrate.ts";
import { renderMemory, type MemoryRow } from "./memory.ts";
import { CKAN_CORES, type CostModel, type CostParts, type Version } from "./ckan/cost.ts";

export type Format = "csv" | "json";

export interface ExportResult {
  table: "base" | "rich";
  format: Format;
  rows: number;
  /** The CKAN the upstream answered as. */
  mode: Version;
  /** "zero": answers at once; "ckan": the cost model. */
  cost: "zero" | "ckan";
  run: "cold" | "cached";
  /** The V8 heap cap of the worker's process ("128 MB", "48 MB", "none"). */
  heap: string;
  gzip: boolean;
  /** Which fresh worker process ran it. */
  proc: string;
  status: number;
  wallMs: number;
  ttfbMs: number;
  bytes: number;
  /** Rows counted in the body (records minus framing); a mismatch is a warning, not a failure. */
  rowsSeen: number;
  upstreamRequests: number;
  upstreamBytes: number;
  /** Row chunks the upstream had to serialise during this export (0 when all came from memory). */
  upstreamGenerated: number;
  /** Pages the worker asked for, per records_format. */
  recordsFormats: Record<string, number>;
  /** The upstream's summary of each request: status and parameters. */
  requestLog: string[];
  /** Seconds of CKAN work the cost model charged, most requests at once, seconds queued for a CKAN worker. */
  upstreamModelS: number;
  upstreamPeak: number;
  upstreamQueuedS: number;
  /** How late the upstream's timers fired in all, ms. */
  upstreamLateMs: number;
  /** Where CKAN's modelled work went, and seconds its CPU had any work in progress. */
  upstreamParts: CostParts;
  upstreamBusyS: number;
  /** Of it, seconds with work enough for all of CKAN's cores. */
  upstreamFullS: number;
  /** Seconds from the export's start until CKAN began its first work, and from its last work's end to the export's end. */
  ckanFirstS: number;
  ckanAfterS: number;
  /** The cost model's CKAN CPU and added latency (0 at zero cost). */
  cores: number;
  latencyMs: number;
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
  table: "base" | "rich";
  /** The export it is the floor of: CSV pages, for CSV and JSON alike. */
  format: Format;
  rows: number;
  wallMs: number;
  firstPageMs: number;
  pages: number;
  upstreamBytes: number;
  /** CPU of the floor worker's process while it fetched and discarded the pages. */
  cpuSeconds: number;
}

export interface DumpResult {
  mode: Version;
  cores: number;
  rows: number;
  status: number;
  wallMs: number;
  ttfbMs: number;
  bytes: number;
  rowsSeen: number;
  upstreamModelS: number;
  upstreamLateMs: number;
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
  /** Options (environment variables) that made this run a subset. */
  subset: string[];
  /** Cost cases of at most `rows` rows ran `runs` times; the run of median wall time is reported. */
  costRepeat: { rows: number; runs: number };
  models: CostModel[];
  /** The CKAN capacity each export measured against real CKAN implies. */
  cores: CoresRow[];
  check: CheckRow[] | undefined;
  exports: ExportResult[];
  fetchFloors: FetchFloor[];
  dumps: DumpResult[];
  formats: { rows: number; listsBytes: number; objectsBytes: number; csvBytes: number } | undefined;
  /** bench/memory.ts: the isolate's heap and ArrayBuffers per format, and four exports at once. */
  memory?: MemoryRow[] | undefined;
  targets: Target[];
  notes: string[];
  totalSeconds: number;
}

export const MB = 1024 * 1024;
export const ok = (e: { status: number; error?: string }): boolean => e.status === 200 && e.error === undefined;
export const fixed = (n: number, digits: number): string => (Number.isFinite(n) ? n.toFixed(digits) : "-");
export const thousands = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "-");

export const floorFor = (
  report: Pick<Report, "fetchFloors">,
  e: Pick<ExportResult, "table" | "format" | "rows">,
): FetchFloor | undefined =>
  report.fetchFloors.find((f) => f.table === e.table && f.format === e.format && f.rows === e.rows);
export const dumpFor = (
  report: Pick<Report, "dumps">,
  e: Pick<ExportResult, "mode" | "rows" | "cores">,
): DumpResult | undefined =>
  report.dumps.find((d) => d.mode === e.mode && d.rows === e.rows && d.cores === e.cores && ok(d));

function markdownTable(header: string[], rows: string[][]): string {
  const line = (cells: string[]): string => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

const exportName = (e: ExportResult): string =>
  `/export.${e.format}${e.gzip ? (e.contentEncoding === "gzip" ? " (gzip)" : ` (gzip asked, ${e.contentEncoding} sent)`) : ""}${ok(e) ? "" : e.status === 200 ? " (CUT OFF)" : e.status === 0 ? " (NO ANSWER)" : ` (HTTP ${e.status})`}`;

function checkTable(check: CheckRow[]): string {
  return markdownTable(
    ["CKAN", "200,000 rows, one request at a time", "real CKAN", "model", "bench upstream, measured"],
    check.map((c) => [
      c.version,
      c.name,
      `${fixed(c.ckanS, 3)} s`,
      `${fixed(c.modelS, 3)} s`,
      `${fixed(c.measuredS, 3)} s`,
    ]),
  );
}

function coresTable(rows: CoresRow[]): string {
  return markdownTable(
    ["CKAN", "pages sized to", "pages", "CKAN work alone s", "export / dump, real", "requests' worth at once"],
    rows.map((r) => [
      r.version,
      `${r.pageMiB} MiB`,
      String(r.pages),
      fixed(r.workS, 2),
      `${fixed(r.ratio, 2)}x`,
      fixed(r.cores, 2),
    ]),
  );
}

const modeName = (mode: Version): string => (mode === "2.12" ? "2.12 (keyset)" : `${mode} (offset)`);

function dumpTable(report: Report): string {
  const header = [
    "CKAN",
    "cores",
    "rows",
    "export",
    "worker wall s",
    "TTFB ms",
    "dump wall s",
    "worker / dump",
    "up req",
    "CKAN work s",
    "of it fixed / rows / offset / lists / count s",
    "CKAN busy s",
    "CKAN idle s",
    "most req at once",
    "queued s",
    "worker CPU s",
    "peak RSS MB",
  ];
  const rows = report.exports
    .filter((e) => e.cost === "ckan" && e.latencyMs === 0 && !e.proc.startsWith("latency-"))
    .map((e) => {
      const dump = dumpFor(report, e);
      const p = e.upstreamParts;
      return [
        modeName(e.mode),
        fixed(e.cores, 2),
        thousands(e.rows),
        exportName(e),
        fixed(e.wallMs / 1000, 2),
        fixed(e.ttfbMs, 0),
        dump ? fixed(dump.wallMs / 1000, 2) : "-",
        dump && ok(e) ? `**${fixed(e.wallMs / dump.wallMs, 2)}**` : "-",
        String(e.upstreamRequests),
        fixed(e.upstreamModelS, 2),
        `${fixed(p.fixed, 2)} / ${fixed(p.rows, 2)} / ${fixed(p.skipped, 2)} / ${fixed(p.listed, 2)} / ${fixed(p.counted, 2)}`,
        fixed(e.upstreamBusyS, 2),
        fixed(e.wallMs / 1000 - e.upstreamBusyS, 2),
        String(e.upstreamPeak),
        fixed(e.upstreamQueuedS, 2),
        fixed(e.cpuSeconds, 2),
        fixed(e.peakMb, 0),
      ];
    });
  return markdownTable(header, rows);
}

/** Where each of the largest cost exports' time went, a line per export. */
function whereTimeGoes(report: Report): string {
  const lines = report.exports
    .filter(
      (e) =>
        e.cost === "ckan" &&
        e.latencyMs === 0 &&
        !e.proc.startsWith("latency-") &&
        ok(e) &&
        e.rows === Math.max(...report.exports.map((x) => x.rows)),
    )
    .map((e) => {
      const p = e.upstreamParts;
      const work = p.fixed + p.rows + p.skipped + p.listed + p.counted;
      const share = (x: number): string => `${fixed((100 * x) / work, 0)}%`;
      const dump = dumpFor(report, e);
      const wall = e.wallMs / 1000;
      const floor = work / Math.min(e.cores, 3);
      const spare = Math.max(0, e.upstreamBusyS - e.upstreamFullS);
      const gaps = Math.max(0, wall - e.ckanFirstS - e.upstreamBusyS - e.ckanAfterS);
      const ratio = (s: number): string => (dump ? ` (${fixed(s / (dump.wallMs / 1000), 2)}x the dump)` : "");
      return (
        `- CKAN ${e.mode}, ${e.cores} cores, ${e.format.toUpperCase()}: ${fixed(wall, 2)} s${ratio(wall)}${dump ? `, the dump ${fixed(dump.wallMs / 1000, 2)} s` : ""}. ` +
        `CKAN's work ${fixed(work, 2)} s over ${e.upstreamRequests} requests (rows served ${share(p.rows)}, rows skipped by offset ${share(p.skipped)}, \`_id\`s listed ${share(p.listed)}, the fixed cost per request ${share(p.fixed)}, include_total's count ${share(p.counted)}): ` +
        `${fixed(floor, 2)} s on ${e.cores} cores however it is asked${ratio(floor)}, the floor for these requests. ` +
        `The export's ${fixed(wall, 2)} s: ${fixed(e.ckanFirstS, 2)} s before CKAN began (the request reaching the worker, the first page asked), ` +
        `${fixed(e.upstreamFullS, 2)} s with all of CKAN's cores busy, ${fixed(spare, 2)} s with requests in service but cores to spare (fewer asked than CKAN has cores: the first page and its probe, answers waiting for the worker to read them, the last pages), ` +
        `${fixed(gaps, 2)} s with none in service between requests (the worker writing pages, none asked), ${fixed(e.ckanAfterS, 2)} s after CKAN's last answer (the worker writing the last page). ` +
        `The worker's CPU, ${fixed(e.cpuSeconds, 2)} s, runs beside CKAN's.`
      );
    });
  return lines.length
    ? `Where the time goes, ${thousands(Math.max(...report.exports.map((x) => x.rows)))} rows:\n\n${lines.join("\n")}`
    : "";
}

/** Each export with latency added, beside the same export without and what one page at a time would add. */
export function latencyRows(
  report: Pick<Report, "exports">,
): { e: ExportResult; base: ExportResult; added: number; serial: number }[] {
  return report.exports
    .filter((e) => e.cost === "ckan" && e.latencyMs > 0 && ok(e))
    .flatMap((e) => {
      const base = report.exports.find(
        (b) =>
          b.cost === "ckan" &&
          b.latencyMs === 0 &&
          b.proc === e.proc &&
          b.mode === e.mode &&
          b.cores === e.cores &&
          b.rows === e.rows &&
          b.format === e.format &&
          ok(b),
      );
      return base
        ? [{ e, base, added: (e.wallMs - base.wallMs) / 1000, serial: (e.upstreamRequests * e.latencyMs) / 1000 }]
        : [];
    });
}

function latencyTable(report: Report): string {
  return markdownTable(
    [
      "CKAN",
      "rows",
      "export",
      "added a page ms",
      "wall s without",
      "wall s with",
      "the export adds s",
      "up req",
      "one page at a time adds s",
      "share",
    ],
    latencyRows(report).map(({ e, base, added, serial }) => [
      modeName(e.mode),
      thousands(e.rows),
      exportName(e),
      String(e.latencyMs),
      fixed(base.wallMs / 1000, 2),
      fixed(e.wallMs / 1000, 2),
      fixed(added, 2),
      String(e.upstreamRequests),
      fixed(serial, 2),
      fixed(added / serial, 2),
    ]),
  );
}

function cpuTable(report: Report): string {
  const header = [
    "table",
    "export",
    "rows",
    "process",
    "heap",
    "run",
    "wall s",
    "TTFB ms",
    "rows/s",
    "out MB",
    "up req",
    "up MB",
    "peak RSS MB",
    "CPU s",
    "floor CPU s",
    "CPU / floor",
    "X-Cache",
  ];
  const rows = report.exports
    .filter((e) => e.cost === "zero")
    .map((e) => {
      const floor = floorFor(report, e);
      const seconds = e.wallMs / 1000;
      return [
        e.table,
        exportName(e),
        thousands(e.rows),
        e.proc,
        e.heap,
        e.run,
        fixed(seconds, 2),
        fixed(e.ttfbMs, 0),
        thousands(e.rowsSeen / seconds),
        fixed(e.bytes / MB, 1),
        String(e.upstreamRequests),
        fixed(e.upstreamBytes / MB, 1),
        fixed(e.peakMb, 0),
        fixed(e.cpuSeconds, 2),
        floor ? fixed(floor.cpuSeconds, 2) : "-",
        floor && floor.cpuSeconds > 0 && e.run === "cold" ? `${fixed(e.cpuSeconds / floor.cpuSeconds, 2)}x` : "-",
        e.xCache,
      ];
    });
  return markdownTable(header, rows);
}

function floorsTable(report: Report): string {
  const header = ["table", "rows", "pages as", "pages", "up MB", "wall s", "CPU s", "first page ms"];
  const rows = report.fetchFloors.map((f) => [
    f.table,
    thousands(f.rows),
    "csv",
    String(f.pages),
    fixed(f.upstreamBytes / MB, 1),
    fixed(f.wallMs / 1000, 2),
    fixed(f.cpuSeconds, 2),
    fixed(f.firstPageMs, 0),
  ]);
  return markdownTable(header, rows);
}

export function render(report: Report): string {
  const m = report.machine;
  const f = report.formats;
  const load = `Other processes on the machine used ${fixed(m.otherLoad.mean * 100, 0)}% of its CPU during the run (worst second ${fixed(m.otherLoad.worst * 100, 0)}%)${m.otherLoad.mean > 0.1 ? ": **the figures below are noisy; rerun on a quiet machine**" : ""}.`;
  const sections = [
    `# Benchmark results

\`npm run bench\`${report.subset.length ? ` (a subset: ${report.subset.join(", ")})` : ""}, ${m.date}. Machine: ${m.cores} cores (${m.cpuModel}), ${fixed(m.memoryGb, 1)} GB memory, Node ${m.node}, workerd ${m.workerd}, wrangler ${m.wrangler}. Whole run: ${fixed(report.totalSeconds, 0)} s. ${load}

The upstream is a synthetic CKAN on loopback (\`bench/upstream.ts\`): \`datastore_search\` as CKAN 2.12 (keyset paging with
\`include_next_page\`, range filters on \`_id\`) or as CKAN 2.11 or 2.10 (409 on \`include_next_page\`: no range filters, so the worker pages by offset, or by lists of \`_id\`s where offsets would run deeper than the lists cost,
${"`UPSTREAM_CONCURRENCY`"} pages at once), and \`/datastore/dump/<id>\`. Tables: "base", 12 columns (int, numeric, float8, text with
commas/quotes/non-ASCII, timestamp, bool, nulls) plus \`_id\`, and "rich", 10 columns with \`_text\` arrays, json, numerics
of 29 digits and many formula-like texts. The worker runs in \`wrangler dev\` (workerd), bundled once from the working
tree (${m.code}), V8 flag \`${m.heapCap}\` standing in for production's 128 MB isolate unless a row says otherwise. RSS and
CPU are those of the workerd process that runs the worker. Requests ask for no compression unless marked gzip. MB = MiB.`,
  ];
  if (report.check) {
    sections.push(`## The cost model

Fitted per version on real CKAN's \`datastore_search\` timings (\`bench/ckan/real-timings.json\`: 2.12, 2.11.5 and 2.10.10,
3 gunicorn workers, PostgreSQL 15, loopback, 2 cores, the 200,000-row table, one request at a time; see \`bench/ckan/cost.ts\`):

${report.models.map((m) => `- ${describeModel(m)}.`).join("\n")}

Self-check, the same requests against the bench upstream (measured times include the loopback transfer and timer
lateness on this machine):

${checkTable(report.check)}

One request at a time says nothing of how CKAN serves several. The worker's exports measured against the same real
CKANs (issue 28) imply how many requests' worth of work CKAN did at once while the worker kept it busy: far from the 3 its
gunicorn workers would allow, as PostgreSQL, gunicorn and the worker shared 2 cores. The model's CKAN shares
${CKAN_CORES} cores (the median) among the requests in service; the runs below are also made with a core per worker (3).

${coresTable(report.cores)}`);
  }
  if (report.exports.some((e) => e.cost === "ckan")) {
    sections.push(`## Against CKAN's own dump (the upstream costs what CKAN costs)

Each export is the whole table, with the edge cache off (wrangler dev's cache is JavaScript in the worker's own process: see bench/run.ts), one wrangler dev per CKAN version; the dump is \`/datastore/dump/<id>\` of the same
table, one streaming request (CKAN 2.12 pages it by keyset inside, 2.11 and 2.10 by offset). The worker pages 2.12 by
\`_id\` ranges, 2.11 and 2.10 by offset, the pages past the table's middle asked from its end (\`sort: "_id desc"\`: src/ckan/from-end.ts; lists of \`_id\`s cost CKAN more at these sizes: bench/ckan/LIST-FILTER.md). "CKAN work" is the work the
model charged, summed over requests as if each ran alone, and where it went: the fixed cost per request, rows served,
rows skipped by offset, \`_id\`s named by list filters, include_total's count(*). "CKAN busy" is the wall time CKAN had any request in service, "CKAN
idle" the rest of the export's wall time (the worker's first page, its CPU, gaps between pages). "most req at once" counts
requests in service or queued (${report.models[0]?.workers ?? 3} CKAN workers). ${
      report.costRepeat.runs > 1
        ? `Cases of ${thousands(report.costRepeat.rows)} rows or fewer ran ${report.costRepeat.runs} times (\`BENCH_COST_REPEAT\`), the dump and the exports in turn, and each row below is the run of median wall time (a second's run spreads 10-20% on a shared machine); longer ones ran once. The first export in each wrangler dev runs in a fresh isolate, its code not yet compiled: about 0.1 s more CPU for 200,000 rows.`
        : "Each case ran once."
    }

${dumpTable(report)}

${whereTimeGoes(report)}${
  latencyRows(report).length
    ? `

Latency hidden: the same export with every \`datastore_search\` answer ${report.exports.find((e) => e.latencyMs > 0)?.latencyMs} ms later (a distant CKAN; the delay holds no CKAN
worker), beside what fetching its pages one at a time would add (requests x the delay).

${latencyTable(report)}`
    : ""
}`);
  }
  if (report.exports.some((e) => e.cost === "zero")) {
    sections.push(`## CPU and memory (zero-cost upstream)

Every answer leaves at once, so the worker is what is measured; the edge cache is off but in the "cache" process. Process "csv-1" etc. is one fresh wrangler dev that
exports 250,000 rows and then 1,000,000; "CPU / floor" divides by the fetch-and-discard floor of the same pages.

${cpuTable(report)}

Fetch-and-discard floors: a minimal worker in the same runtime fetches the pages the export asks for (CSV pages, for CSV
and JSON alike), one after another, reads each body and keeps nothing.

${floorsTable(report)}`);
  }
  if (report.memory) {
    sections.push(`## Memory as the isolate holds it

\`npm run bench:memory\` (also part of \`npm run bench\`): each export in a fresh \`wrangler dev\` whose V8 heap is capped
(\`--max-old-space-size\`), the isolate read over the inspector (\`Runtime.getHeapUsage\`: \`usedSize\` is the JavaScript
heap, \`backingStorageSize\` the ArrayBuffers outside it, both inside a production isolate's 128 MB) as often as the busy
isolate answers (asked every 5 ms: "samples"). CKAN 2.12 at zero cost, edge cache off. "died": the isolate reached its
heap limit. CPU / CSV compares with CSV's export of the same rows under the same cap, in the same run. "live heap": a
run of its own under the small cap that forces a full collection (\`HeapProfiler.collectGarbage\`) every 100 ms and reads
\`usedSize\` right after it, the heap without the garbage V8 collects lazily (its CPU includes those collections).

${renderMemory(report.memory)}`);
  }
  if (f) {
    sections.push(`## Upstream bytes by records_format (${thousands(f.rows)} rows, same pages, every column)

| lists | objects | lists saves | csv (for reference) |
| --- | --- | --- | --- |
| ${fixed(f.listsBytes / MB, 1)} MB | ${fixed(f.objectsBytes / MB, 1)} MB | ${fixed((1 - f.listsBytes / f.objectsBytes) * 100, 1)}% | ${fixed(f.csvBytes / MB, 1)} MB |`);
  }
  sections.push(`## Targets

${report.targets.map((t) => `- **${t.met ? "met" : "NOT met"}**: ${t.name}. ${t.detail}`).join("\n")}`);
  sections.push(`## Notes

${report.notes.map((n) => `- ${n}`).join("\n")}`);
  return `${sections.join("\n\n")}\n`;
}

/** bench/RESULTS.md's section written by `npm run bench:snapshot`, which `npm run bench` keeps. */
export const SNAPSHOT_SECTION = "## Snapshot runs as Workflows";

/** A results file with `section` (its first line the heading) in place of the one there, or added at the end. */
export function withSection(results: string, section: string): string {
  const heading = section.slice(0, section.indexOf("\n"));
  const at = results.indexOf(`\n${heading}\n`);
  if (at < 0) return `${results.trimEnd()}\n\n${section.trimEnd()}\n`;
  const next = results.indexOf("\n## ", at + heading.length + 1);
  return `${results.slice(0, at).trimEnd()}\n\n${section.trimEnd()}\n${next < 0 ? "" : results.slice(next)}`;
}

/** The snapshot bench's section of a results file, or undefined. */
export function sectionOf(results: string, heading: string): string | undefined {
  const at = results.indexOf(`\n${heading}\n`);
  if (at < 0) return undefined;
  const next = results.indexOf("\n## ", at + heading.length + 1);
  return results.slice(at + 1, next < 0 ? undefined : next);
}
