import { HttpError, TooManyRequests } from "../errors.ts";

/** Rows of the first page: small, so the first byte leaves early and its size calibrates the rest. */
export const FIRST_PAGE_ROWS = 1000;
/**
 * Upstream answer bytes per page to aim for when pages are copied as bytes, which are read as they
 * arrive (streamed-page.ts): a page holds a batch of rows at a time, never its answer, so pages are
 * as large as CKAN serves (32,000 rows, its rows_max) unless rows are wider than 1 KB. Fewer pages
 * cost CKAN less: a fixed cost per request, and on offset paging the rows skipped grow with the
 * number of pages (see bench/RESULTS.md).
 */
export const TARGET_PAGE_BYTES = 32 * 1024 * 1024;

/**
 * What a page in flight costs the isolate when its answer is read whole (pages of rows): its answer,
 * then the rows or output made from it (at 2 MB answers one export's ArrayBuffers stayed near 20 MB).
 */
export const WHOLE_PAGE_COST = 2 * 1024 * 1024;

/**
 * The same for a page read as it arrives: its answer waits in the connection until its turn, then
 * a batch of rows (SEGMENT_BYTES) and its output are held at a time.
 */
export const STREAMED_PAGE_COST = 1024 * 1024;

/**
 * The same for pages read as rows (XLSX, the decimal comma): a row costs several times its bytes in
 * JavaScript heap (a string per value, an array per row), and the heap is what a small isolate
 * runs out of (measured: 4 MB pages of rows killed XLSX under a 48 MB heap).
 */
export const ROW_PAGE_BYTES = 1024 * 1024;

/**
 * Upstream page bytes all exports in one isolate may have in flight at once: the isolate's 128 MB
 * are shared by every request it runs, and a page in memory costs several times its answer (the
 * output or rows made from it). One export alone keeps its full window; several share this, down to
 * one page ahead each (four exports at once: one each).
 */
export const ISOLATE_PAGE_BUDGET = 12 * 1024 * 1024;

/**
 * Output bytes all exports in one isolate may hold to hand on pages asked from the table's end
 * (from-end.ts), which arrive in the wrong order: one export alone holds a page of CSV or JSON of
 * the bench's table (9-14 MB at 32,000 rows); several share this, and pages too large for their
 * share are asked by offset as before.
 */
export const ISOLATE_HELD_BUDGET = 16 * 1024 * 1024;

/** Rows a page holds at about `target` bytes, from what `rows` rows cost in `responseBytes`, at most `cap`. */
export function rowsPerPage(
  cap: number,
  responseBytes: number | undefined,
  rows: number,
  target = TARGET_PAGE_BYTES,
): number {
  if (responseBytes === undefined || rows === 0) return cap;
  return Math.max(1, Math.min(cap, Math.floor(target / (responseBytes / rows))));
}

/** Rows per page, from the bytes pages actually cost, never above the configured or the site's cap. */
export class PageSizer {
  #cap: number;
  #rows: number;
  readonly #target: number;
  /** Rows kept free under the cap (see `spareOneRow`). */
  #spare = 0;

  /** `target`: the answer bytes a page should hold (TARGET_PAGE_BYTES, or ROW_PAGE_BYTES for rows). */
  constructor(cap: number, target = TARGET_PAGE_BYTES) {
    this.#target = target;
    this.#cap = cap;
    this.#rows = Math.min(FIRST_PAGE_ROWS, cap);
  }

  get rows(): number {
    return this.#rows;
  }

  /** The most rows a request may ask for: the configured page size, or the site's cap once seen. */
  get cap(): number {
    return this.#cap;
  }

  /** The site applied a lower limit than asked (its rows_max): never ask for more again. */
  capAt(limit: number): void {
    this.#cap = Math.max(1, Math.min(this.#cap, limit));
    this.#rows = Math.min(this.#rows, this.#largest());
  }

  /** From now on, pages of a row fewer than the cap: a request may then ask one row more than a page. */
  spareOneRow(): void {
    this.#spare = 1;
    this.#rows = Math.min(this.#rows, this.#largest());
  }

  #largest(): number {
    return Math.max(1, this.#cap - this.#spare);
  }

  /**
   * A page's answer tells what a row costs, unless it holds few rows: its envelope (the fields,
   * the links) would then pass for rows, and the next pages shrink for nothing (offset paging asks
   * the short page the count leaves before the full ones: it may hold one row).
   */
  observe(responseBytes: number | undefined, rows: number): void {
    if (rows < Math.min(this.#rows, FIRST_PAGE_ROWS)) return;
    this.#rows = rowsPerPage(this.#largest(), responseBytes, rows, this.#target);
  }
}

/**
 * Exports one isolate runs at once. Each needs, however its window shrinks, one page ahead and the
 * one being written: up to about 12 MiB (a JSON page's answer and its output twice over), or as
 * much heap for a page of rows (measured: bench:memory, four at once peak at 55 MiB of
 * ArrayBuffers and 93 MiB of a lazily collected heap). Eight fit the 128 MB the isolate shares
 * with everything else it runs; a ninth is refused with a 503 rather than risking the isolate, which
 * would take every request in it down.
 */
export const MAX_EXPORTS_PER_ISOLATE = 8;

/** Seconds a refused export is told to wait: long enough for a short export to finish. */
export const BUSY_RETRY_SECONDS = 10;

/** The 503 of an isolate already running as many exports as it holds. */
export class IsolateBusy extends HttpError {
  constructor(running: number) {
    super(
      503,
      `This worker instance is already running ${running} exports, as many as its memory holds at once; try again in ${BUSY_RETRY_SECONDS} seconds.`,
      {
        headers: { "retry-after": String(BUSY_RETRY_SECONDS) },
      },
    );
  }
}

/**
 * Exports running in this isolate, with when each last moved and how to stop it. One whose byte
 * stream's watchdog could not run (its request torn down unseen) is stopped here after STALLED_MS:
 * its upstream fetch aborted and its pages let go, not merely left uncounted.
 */
const running = new Map<object, { moved: number; stop: () => void }>();
const STALLED_MS = 60_000;

export interface Admission {
  /** The export moved (a chunk went out): it still counts. */
  touch(): void;
  /** The export ended, however it ended. */
  release(): void;
  /** What stops the export if the isolate finds it stalled (see STALLED_MS). */
  onStalled(stop: () => void): void;
}

/** A place among the exports this isolate runs, or a 503 (with Retry-After) when they are as many as it holds. */
export function admitExport(): Admission {
  const now = Date.now();
  for (const [export_, entry] of running) {
    if (now - entry.moved <= STALLED_MS) continue;
    running.delete(export_);
    entry.stop();
  }
  if (running.size >= MAX_EXPORTS_PER_ISOLATE) throw new IsolateBusy(running.size);
  const token = {};
  const entry = { moved: now, stop: () => {} };
  running.set(token, entry);
  return {
    touch: () => void (entry.moved = Date.now()),
    release: () => void running.delete(token),
    onStalled: (stop) => void (entry.stop = stop),
  };
}

/**
 * Exports one client (by CF-Connecting-IP) may run at once in an isolate: fewer than the isolate
 * holds, so a client that opens many downloads and stalls them leaves room for everyone else.
 */
export const MAX_EXPORTS_PER_CLIENT = 3;

/** The 429 of a client already running as many exports as one client may. */
export class ClientBusy extends TooManyRequests {
  constructor(running: number) {
    super(
      `This address is already running ${running} exports at once, as many as one client may; try again when one has finished (in ${BUSY_RETRY_SECONDS} seconds).`,
      BUSY_RETRY_SECONDS,
    );
    this.name = "ClientBusy";
  }
}

/** Exports running in this isolate per client. */
const perClient = new Map<string, number>();

/** A client's place among its running exports (released once, however the export ends), or a 429. */
export function admitClient(client: string): { release(): void } {
  const count = perClient.get(client) ?? 0;
  if (count >= MAX_EXPORTS_PER_CLIENT) throw new ClientBusy(count);
  perClient.set(client, count + 1);
  let released = false;
  return {
    release: () => {
      if (released) return;
      released = true;
      const left = (perClient.get(client) ?? 1) - 1;
      if (left <= 0) perClient.delete(client);
      else perClient.set(client, left);
    },
  };
}
