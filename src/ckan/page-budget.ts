/** Rows of the first page: small, so the first byte leaves early and its size calibrates the rest. */
export const FIRST_PAGE_ROWS = 1000;
/** Upstream JSON per page to aim for: wide rows get fewer per page, well inside a 128 MB isolate. */
export const TARGET_PAGE_BYTES = 4 * 1024 * 1024;

/**
 * Upstream page text all exports in one isolate may have in flight at once: the isolate's 128 MB
 * are shared by every request it runs, and a page in memory costs several times its text (the
 * rows read from it, the text written from them). One export alone keeps its full window; several
 * share this, down to one page ahead each.
 */
export const ISOLATE_PAGE_BUDGET = 24 * 1024 * 1024;

/** Rows a page holds at about TARGET_PAGE_BYTES, from what `rows` rows cost in `responseBytes`, at most `cap`. */
export function rowsPerPage(cap: number, responseBytes: number | undefined, rows: number): number {
  if (responseBytes === undefined || rows === 0) return cap;
  return Math.max(1, Math.min(cap, Math.floor(TARGET_PAGE_BYTES / (responseBytes / rows))));
}

/** Rows per page, from the bytes pages actually cost, never above the configured or the site's cap. */
export class PageSizer {
  #cap: number;
  #rows: number;

  constructor(cap: number) {
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
    this.#rows = rowsPerPage(this.#cap, responseBytes, rows);
  }
}
