/** Rows of the first page: small, so the first byte leaves early and its size calibrates the rest. */
export const FIRST_PAGE_ROWS = 1000;
/**
 * Upstream answer bytes per page to aim for when pages are copied as bytes: wide rows get fewer
 * per page. A page in flight holds its answer, then its output (JSON's is 2-3 times a CSV answer)
 * until the runtime has written it; at 2 MB one export's ArrayBuffers stay near 20 MB (measured:
 * bench:memory), at 4 MB JSON's passed 50 MB.
 */
export const TARGET_PAGE_BYTES = 2 * 1024 * 1024;

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

/** Rows a page holds at about `target` bytes, from what `rows` rows cost in `responseBytes`, at most `cap`. */
export function rowsPerPage(cap: number, responseBytes: number | undefined, rows: number, target = TARGET_PAGE_BYTES): number {
  if (responseBytes === undefined || rows === 0) return cap;
  return Math.max(1, Math.min(cap, Math.floor(target / (responseBytes / rows))));
}

/** Rows per page, from the bytes pages actually cost, never above the configured or the site's cap. */
export class PageSizer {
  #cap: number;
  #rows: number;
  readonly #target: number;

  /** `target`: the answer bytes a page should hold (TARGET_PAGE_BYTES, or ROW_PAGE_BYTES for rows). */
  constructor(cap: number, target = TARGET_PAGE_BYTES) {
    this.#target = target;
    this.#cap = cap;
    this.#rows = Math.min(FIRST_PAGE_ROWS, cap);
  }

  get rows(): number {
    return this.#rows;
  }

  /** The site applied a lower limit than asked (its rows_max): never ask for more again. */
  capAt(limit: number): void {
    this.#cap = Math.max(1, Math.min(this.#cap, limit));
    this.#rows = Math.min(this.#rows, this.#cap);
  }

  observe(responseBytes: number | undefined, rows: number): void {
    this.#rows = rowsPerPage(this.#cap, responseBytes, rows, this.#target);
  }
}
