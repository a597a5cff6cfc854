// What a request to a real CKAN costs, so the bench upstream answers when CKAN would: a fixed cost
// per request, a cost per row served (per records format), a count(*) when include_total is true, a
// cost per row an offset skips, a pool of gunicorn workers (a request beyond them waits for one),
// and the CPU those workers and PostgreSQL share. The cost is waited out with timers, never burnt as
// CPU, so the CPU of the worker under test stays measurable.
//
// Calibration (`fit`): real CKAN 2.12, 2.11.5 and 2.10.10 (3 gunicorn sync workers, PostgreSQL 15,
// loopback, 2 cores), the 200,000-row, 12-column table, one request at a time, median of 3
// (real-timings.json, a copy of the shared ckan-real-timings set). Per version, least squares over its
// 36 datastore_search timings (csv and objects; 1000, 10000 and 32000 rows; offsets 0, 100,000 and
// 168,000; include_total true and false; on 2.12 also two keyset pages):
//   seconds = fixed + rows · perRow[format] + offset · skip + (include_total ? count : 0)
// The count was measured on the whole table only, so it is charged per matching row (count/200,000).
// 2.12's fitted count is nil (its total is the cached `_table_stats` figure): clipped at 0.
// `lists` was not measured; it is charged as `csv` (both are built by one SQL string aggregation).
// The dump's per row is what makes the modelled dump of the same table take the measured time, its
// pages of 32,000 rows each paying the fixed cost and (2.10, 2.11: offset paging) the rows skipped.
//
// Concurrency: the one-at-a-time timings say nothing about it. The worker's exports measured on the
// same machine and hour (issue 28: CSV of the whole table, 2 MiB pages, UPSTREAM_CONCURRENCY 3)
// took 0.96-1.05x the dump on 2.12, 1.23-1.47x on 2.11, 1.25-1.40x on 2.10, and with 4 MiB pages
// 0.78-0.83x, 0.85-0.90x and 0.74x. Three workers each with a core of their own would have made
// those 0.34-0.65x. Replaying those page plans on the fitted costs, the work CKAN got done per
// second while the worker kept it busy was 1.06-1.73 requests' worth, median 1.35: two cores shared
// by PostgreSQL, gunicorn and the worker under test. `cores` is that capacity: requests in service
// share it equally (processor sharing), none faster than alone.
import { readFileSync } from "node:fs";

export type Version = "2.10" | "2.11" | "2.12";
export const VERSIONS: readonly Version[] = ["2.12", "2.11", "2.10"];

export interface CostModel {
  version: Version;
  /** Per request (and per page of a dump), ms. */
  fixedMs: number;
  /** Per row served, µs, per records format. */
  rowUs: { lists: number; objects: number; csv: number };
  /** Per row the dump streams, µs. */
  dumpRowUs: number;
  /** Per row a count(*) reads (the rows matching the request's filters), µs. */
  countUs: number;
  /** Per row skipped by offset, µs. */
  skipUs: number;
  /** Per `_id` named by a list filter (`IN`), µs: see LIST_FILTER. */
  listUs: number;
  /** The dump pages by offset (2.10, 2.11: no keyset) and pays for the rows it skips. */
  dumpByOffset: boolean;
  /** gunicorn's workers: requests served at once; the rest queue. */
  workers: number;
  /** CPU the workers share, in requests served at full speed at once (see above). */
  cores: number;
  /** Added to every datastore_search answer, ms, holding no worker: a distant CKAN's round trip. */
  latencyMs: number;
  /** How far the fit is from the timings it was fitted on: root mean square and worst, ms. */
  fitRmsMs: number;
  fitWorstMs: number;
}

/**
 * What CKAN charges per `_id` a list filter names (`"filters": {"_id": [ids]}`, an SQL `IN`: how the
 * worker pages deep offsets before 2.12), in rows an offset skips. No real CKAN timing of one exists:
 * it is charged relative to the offset skip fitted on real CKAN, by the ratio of the two measured on
 * one machine (PostgreSQL 15 and CKAN's own Python steps: sqlparse's check of the SQL text with a
 * placeholder per `_id`, and on 2.11 SQLAlchemy's literal rendering; bench/ckan/LIST-FILTER.md,
 * list-filter-timings.json). 2.12 pages by range filters and is charged as 2.11.
 */
export const LIST_FILTER_PER_ID_OVER_SKIP: Record<Version, number> = { "2.10": 33.6, "2.11": 86.6, "2.12": 86.6 };

/** One real timing (real-timings.json). */
export type Timing =
  | {
      ckan: Version;
      records_format: "csv" | "objects";
      limit: number;
      offset: number;
      include_total: boolean;
      median_s: number;
      bytes: number;
    }
  | {
      ckan: Version;
      records_format: "csv" | "objects";
      limit: number;
      keyset_gt: number;
      include_total: boolean;
      median_s: number;
    }
  | { ckan: Version; dump_s: number; bytes: number };

/** The table the timings were taken on. */
export const REAL_ROWS = 200_000;
export const DUMP_PAGE_ROWS = 32_000;
/** Median of the capacities the measured exports imply (see above). */
export const CKAN_CORES = 1.35;

export function realTimings(): Timing[] {
  return JSON.parse(readFileSync(new URL("./real-timings.json", import.meta.url), "utf8")) as Timing[];
}

export type SearchTiming = Exclude<Timing, { dump_s: number }>;
export const isSearch = (t: Timing): t is SearchTiming => "median_s" in t;

/** What one real request asked of the database, as the model counts it. */
export function workOf(t: SearchTiming): Work {
  const offset = "offset" in t ? t.offset : 0;
  const matching = "offset" in t ? REAL_ROWS : REAL_ROWS - t.keyset_gt;
  return {
    format: t.records_format,
    rows: Math.min(t.limit, Math.max(0, matching - offset)),
    skipped: offset,
    listed: 0,
    counted: t.include_total ? matching : undefined,
  };
}

/** Least squares by the normal equations (five unknowns, a few dozen rows). */
function leastSquares(a: number[][], b: number[]): number[] {
  const n = a[0]!.length;
  const m = Array.from({ length: n }, () => new Array<number>(n + 1).fill(0));
  a.forEach((row, k) => {
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) m[i]![j]! += row[i]! * row[j]!;
      m[i]![n]! += row[i]! * b[k]!;
    }
  });
  for (let i = 0; i < n; i++) {
    let p = i;
    for (let r = i + 1; r < n; r++) if (Math.abs(m[r]![i]!) > Math.abs(m[p]![i]!)) p = r;
    [m[i], m[p]] = [m[p]!, m[i]!];
    for (let r = 0; r < n; r++) {
      if (r === i) continue;
      const f = m[r]![i]! / m[i]![i]!;
      for (let c = i; c <= n; c++) m[r]![c]! -= f * m[i]![c]!;
    }
  }
  return m.map((row, i) => row[n]! / row[i]!);
}

/** Sum of the offsets a dump of `rows` rows in pages of 32,000 skips. */
export function dumpSkipped(rows: number): number {
  let skipped = 0;
  for (let at = DUMP_PAGE_ROWS; at < rows; at += DUMP_PAGE_ROWS) skipped += at;
  return skipped;
}

/** The model of one CKAN version, fitted on the real timings. */
export function fit(
  version: Version,
  options: { timings?: Timing[]; workers?: number; cores?: number; latencyMs?: number } = {},
): CostModel {
  const timings = (options.timings ?? realTimings()).filter((t) => t.ckan === version);
  const searches = timings.filter(isSearch);
  const rowsOf = (t: SearchTiming): number[] => {
    const w = workOf(t);
    return [
      1,
      w.format === "csv" ? w.rows : 0,
      w.format === "objects" ? w.rows : 0,
      w.skipped,
      w.counted === undefined ? 0 : 1,
    ];
  };
  const [fixed, csv, objects, skip, count] = leastSquares(
    searches.map(rowsOf),
    searches.map((t) => t.median_s),
  ) as [number, number, number, number, number];
  const counted = Math.max(0, count);
  const residuals = searches.map((t) => {
    const [, r, o, s, c] = rowsOf(t) as [number, number, number, number, number];
    return t.median_s - (fixed + r * csv + o * objects + s * skip + c * counted);
  });
  const dump = timings.find((t) => "dump_s" in t);
  if (dump === undefined || !("dump_s" in dump)) throw new Error(`no dump timing for CKAN ${version}`);
  const dumpByOffset = version !== "2.12";
  const pages = Math.ceil(REAL_ROWS / DUMP_PAGE_ROWS);
  const dumpRow = (dump.dump_s - pages * fixed - (dumpByOffset ? dumpSkipped(REAL_ROWS) * skip : 0)) / REAL_ROWS;
  const us = (s: number): number => s * 1e6;
  return {
    version,
    fixedMs: fixed * 1000,
    rowUs: { lists: us(csv), objects: us(objects), csv: us(csv) },
    dumpRowUs: us(dumpRow),
    countUs: us(counted / REAL_ROWS),
    skipUs: us(skip),
    listUs: us(skip) * LIST_FILTER_PER_ID_OVER_SKIP[version],
    dumpByOffset,
    workers: options.workers ?? 3,
    cores: options.cores ?? CKAN_CORES,
    latencyMs: options.latencyMs ?? 0,
    fitRmsMs: Math.sqrt(residuals.reduce((s, e) => s + e * e, 0) / residuals.length) * 1000,
    fitWorstMs: Math.max(...residuals.map(Math.abs)) * 1000,
  };
}

/** What one datastore_search call asks of the database. */
export interface Work {
  format: "lists" | "objects" | "csv";
  /** Rows returned. */
  rows: number;
  /** Rows an offset skipped. */
  skipped: number;
  /** `_id`s a list filter named (`IN`), matched or not. */
  listed: number;
  /** Rows matching the filters, when include_total asks for a count; undefined when it does not. */
  counted: number | undefined;
}

/** Where a request's seconds go: the fixed part, rows served, rows an offset skipped, `_id`s listed, include_total's count. */
export interface CostParts {
  fixed: number;
  rows: number;
  skipped: number;
  listed: number;
  counted: number;
}

export function costParts(model: CostModel, work: Work): CostParts {
  return {
    fixed: model.fixedMs / 1000,
    rows: (work.rows * model.rowUs[work.format]) / 1e6,
    skipped: (work.skipped * model.skipUs) / 1e6,
    listed: (work.listed * model.listUs) / 1e6,
    counted: ((work.counted ?? 0) * model.countUs) / 1e6,
  };
}

/** Seconds of CKAN's work one datastore_search call takes, alone on the machine. */
export function costSeconds(model: CostModel, work: Work): number {
  const p = costParts(model, work);
  return p.fixed + p.rows + p.skipped + p.listed + p.counted;
}

/** Seconds of one dump page of `rows` rows starting `at` rows into the table, alone on the machine. */
export function dumpPageSeconds(model: CostModel, rows: number, at: number): number {
  return model.fixedMs / 1000 + (rows * model.dumpRowUs + (model.dumpByOffset ? at * model.skipUs : 0)) / 1e6;
}

/** The dump of `rows` rows, alone on the machine, s. */
export function dumpSeconds(model: CostModel, rows: number): number {
  let s = 0;
  for (let at = 0; at < rows || at === 0; at += DUMP_PAGE_ROWS)
    s += dumpPageSeconds(model, Math.min(DUMP_PAGE_ROWS, rows - at), at);
  return s;
}

/** gunicorn's workers: `acquire` waits for a free one, held until the request is served. */
export class WorkerPool {
  #busy = 0;
  #queue: (() => void)[] = [];
  /** Most requests in service or waiting at once since the last reset. */
  peak = 0;
  /** Seconds requests spent waiting for a worker since the last reset. */
  queuedSeconds = 0;

  size: number;

  constructor(size: number) {
    this.size = size;
  }

  async acquire(): Promise<() => void> {
    const asked = performance.now();
    this.peak = Math.max(this.peak, this.#busy + this.#queue.length + 1);
    if (this.#busy >= this.size) await new Promise<void>((resolve) => this.#queue.push(resolve));
    else this.#busy++;
    this.queuedSeconds += (performance.now() - asked) / 1000;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#queue.shift();
      if (next)
        next(); // the worker passes straight to the next request
      else this.#busy--;
    };
  }
}

interface Job {
  /** Seconds of work left at full speed. */
  left: number;
  done: (lateMs: number) => void;
}

/**
 * CKAN's CPU: work in progress shares `cores` equally, each job at most at full speed. `run` resolves
 * once its work is done, with how late its timer fired (ms; a busy machine delays timers).
 */
export class SharedCpu {
  #jobs = new Set<Job>();
  #at = performance.now();
  #timer: ReturnType<typeof setTimeout> | undefined;
  cores: number;
  /** Seconds some work was in progress (for "CKAN busy"), since the last reset. */
  busySeconds = 0;
  /** Of those, seconds with work enough for every core (none to spare). */
  fullSeconds = 0;
  /** When the first work since the last reset began and the last one ended (performance.now(), ms). */
  firstAt: number | undefined;
  lastAt: number | undefined;

  constructor(cores: number) {
    this.cores = cores;
  }

  #rate(): number {
    return Math.min(1, this.cores / Math.max(1, this.#jobs.size));
  }

  #advance(): void {
    const now = performance.now();
    const elapsed = (now - this.#at) / 1000;
    if (this.#jobs.size > 0) this.busySeconds += elapsed;
    if (this.#jobs.size >= this.cores) this.fullSeconds += elapsed;
    const done = elapsed * this.#rate();
    for (const job of this.#jobs) job.left -= done;
    this.#at = now;
  }

  /** Starts counting busy, full, first and last afresh. */
  reset(): void {
    this.busySeconds = 0;
    this.fullSeconds = 0;
    this.firstAt = undefined;
    this.lastAt = undefined;
  }

  #settle(): void {
    this.#advance();
    const rate = this.#rate();
    for (const job of [...this.#jobs]) {
      if (job.left > 1e-6) continue;
      this.#jobs.delete(job);
      this.lastAt = performance.now();
      job.done((-job.left / rate) * 1000);
    }
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#jobs.size === 0) return;
    let least = Number.POSITIVE_INFINITY;
    for (const job of this.#jobs) least = Math.min(least, job.left);
    this.#timer = setTimeout(() => this.#settle(), (least / this.#rate()) * 1000);
  }

  run(seconds: number): Promise<number> {
    this.#advance();
    this.firstAt ??= performance.now();
    return new Promise((resolve) => {
      this.#jobs.add({ left: seconds, done: resolve });
      this.#settle();
    });
  }
}

/** Waits `ms`. */
export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
