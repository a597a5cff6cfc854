// The issue's targets, each judged with the figures it was judged on, and notes on where time goes.
import { costSeconds, fit, type Version } from "./ckan/cost.ts";
import { ROWS_MAX } from "./ckan/search.ts";
import { memoryTargets } from "./memory.ts";
import {
  dumpFor,
  fixed,
  floorFor,
  latencyRows,
  MB,
  ok,
  thousands,
  type ExportResult,
  type Report,
  type Target,
} from "./report.ts";

type Measured = Omit<Report, "targets" | "notes" | "totalSeconds">;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length === 0 ? Number.NaN : sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** "409 lists limit 1000 +total +next_page; 200 csv limit 32000 fields:12 x3": consecutive alike requests folded. */
function requestPattern(log: string[]): string {
  const parts: { text: string; count: number }[] = [];
  for (const entry of log) {
    const space = entry.indexOf(" ");
    let text = entry;
    try {
      const p = JSON.parse(entry.slice(space + 1)) as Record<string, unknown>;
      const flags = [
        p.include_total === false ? "" : "+total",
        p.include_next_page ? "+next_page" : "",
        Array.isArray(p.fields) ? `fields:${p.fields.length}` : "",
        // An `_id` list (CKAN before 2.12) as its length: the ids themselves tell nothing.
        p.filters
          ? `filters ${JSON.stringify(p.filters, (_, v) => (Array.isArray(v) && v.length > 3 ? `[${v.length} ids]` : v)).replace(/\d+(?! ids)/g, "N")}`
          : "",
        p.offset ? "offset" : "",
        typeof p.sort === "string" && /desc/i.test(p.sort) ? "sort desc" : "",
      ].filter(Boolean);
      text = [
        entry.slice(0, space),
        String(p.records_format ?? "objects"),
        `limit ${String(p.limit ?? 100)}`,
        ...flags,
      ].join(" ");
    } catch {
      // Not a parsed request; shown as it is.
    }
    const last = parts.at(-1);
    if (last?.text === text) last.count++;
    else parts.push({ text, count: 1 });
  }
  return parts.map((p) => (p.count > 1 ? `${p.text} x${p.count}` : p.text)).join("; ");
}

/** Why an export failed, in a line: what the download saw, and whether V8 ran out of heap. */
function failure(e: ExportResult): string {
  const seen = (e.error ?? `${e.rowsSeen} rows of ${e.rows}`).split("; worker output")[0]!;
  return /heap out of memory|Reached heap limit/.test(e.error ?? "")
    ? `${seen}; V8 reached its heap limit ("JavaScript heap out of memory")`
    : seen;
}

/**
 * CKAN's work (s, the cost model) for the least any export of `rows` rows could ask: a first page
 * with the count, then pages of rows_max, each by range filter on 2.12, before it by offset (its
 * rows skipped charged) or by a list of its `_id`s (each charged), whichever costs less. By offset
 * the short page goes first (it then re-reads nothing, where last it would re-read all the others);
 * by list last (the first page, never listed, is then a full one).
 */
function leastWork(version: Version, rows: number): number {
  const model = fit(version);
  const short = rows % ROWS_MAX;
  // "ends": offsets counted from whichever end of the table is nearer (`sort: "_id desc"` past the
  // middle), which no export asks yet: each page re-reads at most half the table.
  const plan = (by: "range" | "offset" | "ends" | "list"): number => {
    let work = 0;
    for (let at = 0; at < rows; ) {
      const offsets = by === "offset" || by === "ends";
      const page = offsets && at === 0 && short > 0 ? short : Math.min(ROWS_MAX, rows - at);
      work += costSeconds(model, {
        format: "csv",
        rows: page,
        skipped: by === "offset" ? at : by === "ends" ? Math.min(at, rows - at - page) : 0,
        listed: by === "list" && at > 0 ? page : 0,
        counted: at === 0 ? rows : undefined,
      });
      at += page;
    }
    return work;
  };
  return version === "2.12" ? plan("range") : Math.min(plan("offset"), plan("ends"), plan("list"));
}

const CPU_LIMIT = { csv: 2, json: 1.5 };
const RSS_GROWTH_MB = 16;

export function evaluateTargets(report: Measured): { targets: Target[]; notes: string[] } {
  const targets: Target[] = [];
  const notes: string[] = [];
  const zero = (e: ExportResult): boolean =>
    e.cost === "zero" && e.run === "cold" && !e.gzip && e.heap !== "none" && e.heap !== "48 MB" && ok(e);
  const missing = (name: string): void =>
    void targets.push({ name, detail: "Not measured (an export failed or was not run; see the tables).", met: false });

  // 1. The worker against the upstream's own dump, with CKAN's costs: 0.6x on 2.12 and 2.11, 0.8x on 2.10.
  for (const e of report.exports.filter(
    (x) => x.cost === "ckan" && x.latencyMs === 0 && !x.proc.startsWith("latency-"),
  )) {
    const limit = e.mode === "2.10" ? 0.8 : 0.6;
    const name = `${e.format.toUpperCase()} export of ${thousands(e.rows)} rows <= ${limit}x CKAN ${e.mode}'s dump of them (CKAN on ${e.cores} cores)`;
    const dump = dumpFor(report, e);
    if (!dump || !ok(e)) {
      missing(name);
      continue;
    }
    const ratio = e.wallMs / dump.wallMs;
    // However the worker asks, CKAN must do the work of its requests on the cores it has.
    const cores = Math.min(e.cores, 3);
    const floor = e.upstreamModelS / cores / (dump.wallMs / 1000);
    const least = leastWork(e.mode, e.rows) / cores / (dump.wallMs / 1000);
    const verdict =
      least > limit
        ? ` The target is below what CKAN's own work allows on ${e.cores} cores: no way of asking for these rows meets it there.`
        : "";
    targets.push({
      name,
      detail: `${fixed(e.wallMs / 1000, 2)} s vs ${fixed(dump.wallMs / 1000, 2)} s: ${fixed(ratio, 2)}x. Floor set by CKAN's own work on ${e.cores} cores: ${fixed(floor, 2)}x for these ${e.upstreamRequests} requests, ${fixed(least, 2)}x for the least any plan could ask (pages of ${thousands(ROWS_MAX)} rows, no probe, offsets from either end).${verdict}`,
      met: ratio <= limit,
    });
  }
  for (const { e, added, serial } of latencyRows(report)) {
    targets.push({
      name: `With ${e.latencyMs} ms added to every page, the ${thousands(e.rows)}-row ${e.format.toUpperCase()} export on CKAN ${e.mode} adds <= half what one page at a time adds`,
      detail: `+${fixed(added, 2)} s vs +${fixed(serial, 2)} s (${e.upstreamRequests} requests one at a time): ${fixed(added / serial, 2)}.`,
      met: added <= serial / 2,
    });
  }

  // 2. CPU against the fetch-and-discard floor, zero cost: base 1,000,000 (median of processes) and rich.
  for (const [table, rows] of [
    ["base", 1_000_000],
    ["rich", 500_000],
  ] as const) {
    for (const format of ["csv", "json"] as const) {
      const runs = report.exports.filter((e) => zero(e) && e.table === table && e.format === format && e.rows === rows);
      const floor = floorFor(report, { table, format, rows });
      if (runs.length === 0 && !floor) continue;
      const name = `CPU of a ${thousands(rows)}-row ${format.toUpperCase()} export of the ${table} table <= ${CPU_LIMIT[format]}x the fetch-and-discard floor`;
      if (runs.length === 0 || !floor) {
        missing(name);
        continue;
      }
      const cpu = median(runs.map((e) => e.cpuSeconds));
      const ratio = cpu / floor.cpuSeconds;
      const each = runs.length > 1 ? ` (median of ${runs.map((e) => fixed(e.cpuSeconds, 2)).join(", ")})` : "";
      targets.push({
        name,
        detail: `${fixed(cpu, 2)} s${each} vs floor ${fixed(floor.cpuSeconds, 2)} s: ${fixed(ratio, 2)}x.`,
        met: ratio <= CPU_LIMIT[format],
      });
    }
  }

  // 3. RSS growth from a quarter of the rows to all, within one process.
  for (const format of ["csv", "json"] as const) {
    const procs = [
      ...new Set(report.exports.filter((e) => zero(e) && e.table === "base" && e.format === format).map((e) => e.proc)),
    ];
    const growth: { quarter: number; all: number }[] = [];
    for (const proc of procs) {
      const [quarter, all] = [250_000, 1_000_000].map((rows) =>
        report.exports.find((e) => e.proc === proc && e.rows === rows && zero(e)),
      );
      if (quarter && all) growth.push({ quarter: quarter.peakMb, all: all.peakMb });
    }
    if (procs.length === 0) continue;
    const name = `Peak RSS grows by <= ${RSS_GROWTH_MB} MB from 250,000 to 1,000,000 rows (${format.toUpperCase()}, within a process, median of processes)`;
    if (growth.length === 0) {
      missing(name);
      continue;
    }
    const grew = median(growth.map((g) => g.all - g.quarter));
    const idle = median(report.exports.filter((e) => zero(e)).map((e) => e.baselineMb));
    targets.push({
      name,
      detail: `${growth.map((g) => `${fixed(g.quarter, 0)} -> ${fixed(g.all, 0)} MB`).join(", ")}: median ${grew >= 0 ? "+" : ""}${fixed(grew, 0)} MB; an idle workerd is about ${fixed(idle, 0)} MB.`,
      met: grew <= RSS_GROWTH_MB,
    });
  }

  // 4. A million-row JSON export in a 48 MB heap.
  const small = report.exports.find((e) => e.heap === "48 MB");
  if (small) {
    targets.push({
      name: "A 1,000,000-row JSON export completes under --max-old-space-size=48",
      detail:
        ok(small) && small.rowsSeen === small.rows
          ? `${thousands(small.rowsSeen)} rows in ${fixed(small.wallMs / 1000, 2)} s, peak RSS ${fixed(small.peakMb, 0)} MB.`
          : `it did not: ${failure(small)}.`,
      met: ok(small) && small.rowsSeen === small.rows,
    });
  }

  // 5. The edge cache, and lists against objects.
  const cold = report.exports.find((e) => e.proc === "cache" && e.run === "cold" && ok(e));
  const cached = report.exports.find((e) => e.proc === "cache" && e.run === "cached" && ok(e));
  if (cold && cached) {
    const speedup = cold.wallMs / cached.wallMs;
    targets.push({
      name: `Cached export: zero upstream requests and >= 20x faster than cold (${thousands(cold.rows)} rows ${cold.format.toUpperCase()})`,
      detail: `repeat made ${cached.upstreamRequests} upstream requests (X-Cache: ${cached.xCache}); ${fixed(cold.wallMs / 1000, 2)} s cold vs ${fixed(cached.wallMs / 1000, 3)} s repeat: ${fixed(speedup, 1)}x.`,
      met: cached.upstreamRequests === 0 && speedup >= 20,
    });
  }
  const f = report.formats;
  if (f) {
    const saving = 1 - f.listsBytes / f.objectsBytes;
    targets.push({
      name: "records_format lists >= 30% fewer bytes than objects",
      detail: `${fixed(f.listsBytes / MB, 1)} MB vs ${fixed(f.objectsBytes / MB, 1)} MB for ${thousands(f.rows)} rows: ${fixed(saving * 100, 1)}% fewer.`,
      met: saving >= 0.3,
    });
  }

  if (report.memory) targets.push(...memoryTargets(report.memory));

  // Notes: how the worker asked, and what could skew the figures.
  for (const mode of ["2.12", "2.11", "2.10"] as const) {
    for (const e of report.exports.filter(
      (x) =>
        x.cost === "ckan" &&
        x.latencyMs === 0 &&
        !x.proc.startsWith("latency-") &&
        x.cores === report.exports.find((y) => y.cost === "ckan")?.cores &&
        x.mode === mode &&
        x.rows === Math.min(...report.exports.filter((y) => y.cost === "ckan").map((y) => y.rows)),
    )) {
      notes.push(
        `Upstream requests of the ${thousands(e.rows)}-row ${e.format.toUpperCase()} export on CKAN ${mode} (status, records_format, limit, extras): ${requestPattern(e.requestLog)}.`,
      );
    }
  }
  for (const e of report.exports.filter((x) => x.cost === "ckan" && ok(x))) {
    const dump = dumpFor(report, e);
    if (!dump || e.rows !== 1_000_000) continue;
    const parts = [
      `worker ${fixed(e.wallMs / 1000, 2)} s, of which CKAN's modelled work is ${fixed(e.upstreamModelS, 2)} s over ${e.upstreamRequests} requests (at most ${e.upstreamPeak} at once, ${fixed(e.upstreamQueuedS, 2)} s queued)`,
      `the dump's is ${fixed(dump.upstreamModelS, 2)} s in one stream`,
    ];
    notes.push(
      `1,000,000 rows ${e.format.toUpperCase()} on CKAN ${e.mode} (${e.cores} cores): ${parts.join("; ")}; workerd CPU ${fixed(e.cpuSeconds, 2)} s.`,
    );
  }
  const late = [...report.exports.filter((e) => e.cost === "ckan"), ...report.dumps];
  if (late.length > 0) {
    notes.push(
      `The upstream's timers fired ${fixed(
        late.reduce((n, e) => n + e.upstreamLateMs, 0),
        0,
      )} ms late in all over the cost-model runs (a busy machine delays them; that time is in the wall times).`,
    );
  }
  const generated = report.exports.filter((x) => x.upstreamGenerated > 0);
  if (generated.length > 0) {
    notes.push(
      `The upstream had to serialise rows during: ${generated.map((e) => `${e.table} ${e.format} ${thousands(e.rows)} ${e.mode} ${e.run} (${e.upstreamGenerated} chunks)`).join(", ")}; those figures include that upstream work.`,
    );
  }
  const reasons = new Map<string, Set<string>>();
  for (const e of report.exports.filter((x) => x.cacheNote !== undefined)) {
    const which = reasons.get(e.cacheNote!) ?? new Set<string>();
    which.add(`${e.format.toUpperCase()} ${thousands(e.rows)}`);
    reasons.set(e.cacheNote!, which);
  }
  for (const [reason, which] of reasons) notes.push(`X-Cache-Note "${reason}" on: ${[...which].join(", ")}.`);
  const zipped = report.exports.find((e) => e.gzip && ok(e));
  if (zipped)
    notes.push(
      `Asked for gzip, the ${thousands(zipped.rows)}-row ${zipped.format.toUpperCase()} export came back ${zipped.contentEncoding}: ${fixed(zipped.cpuSeconds, 2)} s CPU (wrangler's proxy ${fixed(zipped.proxyCpuSeconds, 2)} s), ${fixed(zipped.wallMs / 1000, 2)} s, ${fixed(zipped.bytes / MB, 0)} MB.`,
    );
  const uncapped = report.exports.find((e) => e.heap === "none" && ok(e));
  if (uncapped)
    notes.push(
      `Without a heap cap (wrangler dev's default) a ${thousands(uncapped.rows)}-row ${uncapped.format.toUpperCase()} export peaks at ${fixed(uncapped.peakMb, 0)} MB RSS: V8 grows its heap rather than collect.`,
    );
  const mismatched = [
    ...report.exports.filter((e) => ok(e) && e.rowsSeen !== e.rows),
    ...report.dumps.filter((d) => ok(d) && d.rowsSeen !== d.rows),
  ];
  if (mismatched.length > 0)
    notes.push(
      `Row count mismatch in: ${mismatched.map((e) => `${"format" in e ? e.format : "dump"} ${e.rows} on ${e.mode} (${e.rowsSeen})`).join(", ")}.`,
    );
  for (const e of report.exports.filter((x) => !ok(x))) {
    notes.push(
      `FAILED: ${e.table} ${e.format}${e.gzip ? " gzip" : ""} ${thousands(e.rows)} rows, CKAN ${e.mode}, ${e.cost} cost, heap ${e.heap}, ${e.run}: ${(e.error ?? `HTTP ${e.status}`).replace(/\.+$/, "")}.`,
    );
  }
  return { targets, notes };
}
