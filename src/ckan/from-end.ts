import { rowEnds, type CopiedRecords, type PassedBytes } from "../rows/batch.ts";
import { ownedBytes, release } from "../rows/owned-bytes.ts";
import { idOf } from "./requests.ts";
import { trailingRows } from "./streamed-page.ts";
import type { SearchRequest } from "./types.ts";

// Offset pages past the middle of a table in `_id` order, asked from its end (CKAN before 2.12).
// CKAN re-reads every row before an offset: a page at offset 900,000 of 1,000,000 re-reads 900,000
// rows, but asked as `sort: "_id desc"` at offset 68,000 (the rows after it) only 68,000. So the
// second half of the table re-reads at most half of it, not all of it (bench/RESULTS.md). The price:
// such a page comes in the wrong order, so it is held until it has all arrived, then handed on
// reversed, and it is used only where the isolate has room to hold it (`asksFromEnd`). It carries
// one row more, the last row handed on before it: the page is used only if that row is where it
// should be (`HeldPage.follows`), so a table changed since CKAN counted it is not read through pages
// from the end (it is then read by offset, as before).

/** An export's pages asked from the table's end. */
export interface FromEnd {
  /** CKAN's exact count of the rows the export's search matches, which offsets from the end count back from. */
  total: number;
  /** Set for the rest of the export once a page did not follow on (the table changed) or outgrew its room. */
  off: boolean;
  /** Output bytes per row, from the pages handed on so far: a page's size before it is asked. */
  outputPerRow: number | undefined;
}

/** Whether an offset stretch is asked from the table's end: nearer it than the start, and room to hold it. */
export function asksFromEnd(
  ends: FromEnd | undefined,
  stretch: { offset: number; count: number },
  room: number,
): boolean {
  if (ends === undefined || ends.off || ends.outputPerRow === undefined) return false;
  const fromEnd = ends.total - stretch.offset - stretch.count;
  return fromEnd >= 0 && fromEnd < stretch.offset && stretch.count * ends.outputPerRow <= room;
}

/**
 * The same rows as `{ offset, limit: count }` in `_id` order, asked in `_id desc` order from the
 * end, and the row before them (the last one handed on before this page).
 */
export function fromEndRequest(
  base: SearchRequest,
  stretch: { offset: number; count: number },
  total: number,
): SearchRequest {
  return { ...base, sort: "_id desc", offset: total - stretch.offset - stretch.count, limit: stretch.count + 1 };
}

/** A held batch: its rows already in table order, the last one's `_id`, and the first's (CKAN's `firstId`, `lastId`). */
interface Held {
  page: PassedBytes;
  smallest: string | undefined;
  largest: string | undefined;
}

/**
 * A page asked from the table's end, held as it arrives: its batches in CKAN's order, the largest
 * `_id` first, each reversed as it comes into buffers of its exact size (a reader's are sized for
 * the worst case, up to 2.6 times the bytes). Every buffer it holds is the export's own, freed here
 * unless handed on.
 */
export class HeldPage {
  readonly #batches: Held[] = [];
  /** Bytes held, row ends included. */
  bytes = 0;
  rows = 0;

  hold(records: CopiedRecords): void {
    const { page } = records;
    const kept = page.rows > 0 ? reversed(page) : undefined;
    release(page.bytes);
    release(page.ends);
    if (kept === undefined) return;
    this.#batches.push({ page: kept, smallest: records.lastId, largest: records.firstId });
    this.bytes += kept.bytes.buffer.byteLength + kept.ends.buffer.byteLength;
    this.rows += kept.rows;
  }

  /**
   * The page's largest `_id` when it follows on from `lastId` (the last row handed on): `count` rows
   * and that one, found where it should be, at the page's far end. Rows added or deleted since the
   * table was counted move the rows an offset from the end finds, and then it is not; so does a
   * site that serves fewer rows than asked. Undefined then: the page is asked again by offset.
   */
  follows(lastId: number | undefined, count: number): number | undefined {
    if (lastId === undefined || this.rows !== count + 1) return undefined;
    const largest = idOf(this.#batches[0]?.largest);
    return idOf(this.#batches.at(-1)?.smallest) === lastId && largest !== undefined && largest > lastId
      ? largest
      : undefined;
  }

  /**
   * The rows in table order without the one handed on already, batch by batch, each with its last
   * `_id`; each handed over to the caller (no longer held).
   */
  *inOrder(): Generator<{ batch: PassedBytes; lastId: number | undefined }, void, undefined> {
    let first = true;
    while (this.#batches.length > 0) {
      const held = this.#batches.pop()!;
      let batch = held.page;
      if (first) {
        // The row handed on already, first in table order: its bytes stay in the buffer, unsent.
        batch = trailingRows(held.page, 1);
        release(held.page.ends);
        first = false;
      }
      if (batch.rows > 0) yield { batch, lastId: idOf(held.largest) };
      else release(held.page.bytes);
    }
  }

  /** Frees what is still held (the page was not handed on, or only part of it). */
  drop(): void {
    for (const held of this.#batches.splice(0)) {
      release(held.page.bytes);
      release(held.page.ends);
    }
  }

  /** Drops what a broken answer gave, to hold the answer asked again from its first row. */
  restart(): void {
    this.drop();
    this.bytes = 0;
    this.rows = 0;
  }
}

/** A batch's rows in the opposite order, in buffers of their size. */
function reversed(page: PassedBytes): PassedBytes {
  const bytes = ownedBytes(page.bytes.length);
  const ends = rowEnds(Math.max(1, page.rows));
  let o = 0;
  for (let from = page.rows - 1, k = 0; from >= 0; from--, k++) {
    const start = from === 0 ? 0 : page.ends[from - 1]!;
    const end = page.ends[from]!;
    bytes.set(page.bytes.subarray(start, end), o);
    o += end - start;
    ends[k] = o;
  }
  return { bytes, rows: page.rows, ends: ends.subarray(0, page.rows) };
}
