// What a request to a real CKAN costs, so the bench upstream answers when CKAN would: a fixed cost
// per request, a cost per row served (per records format), a count(*) per matching row when
// include_total is true, a cost per row an offset skips, and a pool of N workers (gunicorn's: a
// request beyond N waits for one). The cost is waited out with timers, never burnt as CPU, so the
// CPU of the worker under test stays measurable.
//
// Calibration: measured on a real CKAN 2.12 (3 gunicorn workers, PostgreSQL 15, loopback, 2 cores),
// 200,000 rows of 12 columns, pages of 32000 one at a time with CKAN's defaults (include_total true):
//   K  datastore_search, lists, keyset:    2.21 s
//   O  datastore_search, objects, offset:  2.90 s
//   D  /datastore/dump/<id> CSV:           0.88 s (one request; CKAN pages it by 32000 inside)
//   C  a page's count(*) is about 20% of its time
// As CKAN 2.12 does, the count of an unfiltered table is not a count(*) but a cached figure (free),
// so in K only the pages after the first (filtered by next_page) count, each its remaining rows; in O
// nothing counts. Four figures do not fix six constants; two are assumed:
//   - the fixed cost per request: 25 ms (auth, resource lookup, field introspection, the query plan);
//   - skipping a row by offset costs what counting it does (PostgreSQL reads the row and drops it).
// Then, with R = 200,000 rows, P = 7 pages of up to 32,000, F the fixed cost:
//   D: P·F + R·csv = 0.88 s                          (the dump's pages: csv records, no count)
//   C: count of all R rows = 0.2 × (F + 32,000·lists + count of R)    (a full lists page that counts)
//   K: P·F + R·lists + count·(168k + 136k + … + 8k) = 2.21 s
//   O: P·F + R·objects + skip·(32k + 64k + … + 192k) = 2.90 s
// `calibrate` solves these; bench/calibrate.ts replays the three runs against the bench upstream.

export interface CostModel {
  /** Per request (and per page of a dump), ms. */
  fixedMs: number;
  /** Per row served, µs, per records format ("csv" also for the dump's rows). */
  rowUs: { lists: number; objects: number; csv: number };
  /** Per row a count(*) reads (the rows matching the request's filters), µs. */
  countUs: number;
  /** Per row skipped by offset, µs. */
  skipUs: number;
  /** Requests served at once; the rest queue. */
  workers: number;
  /** CKAN 2.12 answers an unfiltered table's total from a cache (no count(*)); 2.10 counts. */
  cachedUnfilteredCount: boolean;
}

export interface Measured {
  rows: number;
  pageRows: number;
  dumpS: number;
  keysetListsS: number;
  offsetObjectsS: number;
  countShare: number;
}

/** The real CKAN 2.12's figures the model is calibrated on. */
export const MEASURED: Measured = { rows: 200_000, pageRows: 32_000, dumpS: 0.88, keysetListsS: 2.21, offsetObjectsS: 2.9, countShare: 0.2 };
export const ASSUMED_FIXED_MS = 25;

/** Solves the calibration above for the per-row constants, given the assumed fixed cost. */
export function calibrate(m: Measured = MEASURED, fixedMs = ASSUMED_FIXED_MS, workers = 3): CostModel {
  const F = fixedMs / 1000;
  const pages = Math.ceil(m.rows / m.pageRows);
  let remaining = 0; // rows the keyset pages after the first count
  let skipped = 0; // rows the offset pages skip
  for (let p = 1; p < pages; p++) {
    remaining += m.rows - p * m.pageRows;
    skipped += p * m.pageRows;
  }
  const csv = (m.dumpS - pages * F) / m.rows;
  // C: count·R = share/(1 - share) · (F + pageRows·lists), so count = a·(F + pageRows·lists).
  const a = m.countShare / (1 - m.countShare) / m.rows;
  // K: pages·F + R·lists + remaining·a·(F + pageRows·lists) = keysetListsS
  const lists = (m.keysetListsS - pages * F - remaining * a * F) / (m.rows + remaining * a * m.pageRows);
  const count = a * (F + m.pageRows * lists);
  const objects = (m.offsetObjectsS - pages * F - skipped * count) / m.rows;
  const us = (s: number): number => s * 1e6;
  return { fixedMs, rowUs: { lists: us(lists), objects: us(objects), csv: us(csv) }, countUs: us(count), skipUs: us(count), workers, cachedUnfilteredCount: true };
}

/** What one datastore_search call asks of the database. */
export interface Work {
  format: "lists" | "objects" | "csv";
  /** Rows returned. */
  rows: number;
  /** Rows an offset skipped. */
  skipped: number;
  /** Rows matching the filters, when include_total asks for a count; undefined when it does not. */
  counted: number | undefined;
  /** No filters: CKAN 2.12 takes the total from its cache. */
  unfiltered: boolean;
}

/** Seconds one datastore_search call (or one page of the dump) takes. */
export function costSeconds(model: CostModel, work: Work): number {
  const counts = work.counted !== undefined && !(work.unfiltered && model.cachedUnfilteredCount);
  const us = work.rows * model.rowUs[work.format] + work.skipped * model.skipUs + (counts ? work.counted! * model.countUs : 0);
  return model.fixedMs / 1000 + us / 1e6;
}

/** gunicorn's workers: `run` waits for a free one, holds it while the request is served. */
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
      if (next) next(); // the worker passes straight to the next request
      else this.#busy--;
    };
  }
}

/** Waits until `due` (a performance.now() time); returns how late the timer fired, ms. */
export async function waitUntil(due: number): Promise<number> {
  const left = due - performance.now();
  if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
  return Math.max(0, performance.now() - due);
}
