import { HttpError, UpstreamFailure } from "../errors.ts";
import type { Batch, CopiedRecords, PassedBytes, RecordsReader, RecordsStream } from "../rows/batch.ts";
import { NotTheJson } from "../rows/json-bytes.ts";
import { adopt, own, ownedBytes, release } from "../rows/owned-bytes.ts";
import type { CkanClient } from "./client.ts";
import { StreamedAnswer } from "./raw-json.ts";
import type { SearchRequest, SearchResult } from "./types.ts";

/** Bytes asked of the body per read: fewer, larger reads than the chunks the runtime would hand over. */
const READ_BYTES = 256 * 1024;

/**
 * The body's bytes, read into one buffer reused from read to read where the body is a byte stream
 * (fetch's is): each chunk is a view the consumer copies before asking for the next.
 */
async function* chunksOf(
  body: ReadableStream<Uint8Array>,
  idleMs: number,
): AsyncGenerator<Uint8Array, void, undefined> {
  let reader: ReadableStreamBYOBReader;
  try {
    reader = body.getReader({ mode: "byob" });
  } catch {
    // Not a byte stream (a test's, or another runtime's): its own chunks, each freed once copied.
    const chunks = body.getReader();
    try {
      for (;;) {
        const { done, value } = await withinIdle(chunks.read(), idleMs);
        if (done) return;
        yield adopt(value);
        release(value);
      }
    } finally {
      chunks.cancel().catch(() => {});
    }
  }
  // Each read hands the buffer back as a new one (the old one detached), the read that finds the end
  // too (empty): that last one holds the buffer and is freed at the end, not left among the
  // ArrayBuffers a rarely collected heap keeps (see owned-bytes.ts; it was 256 KB a page).
  let view: Uint8Array = ownedBytes(READ_BYTES);
  let ended = false;
  try {
    for (;;) {
      const { done, value } = await withinIdle(reader.read(new Uint8Array(view.buffer, 0, READ_BYTES)), idleMs);
      if (value !== undefined) view = own(value);
      if (done || value === undefined) {
        ended = true;
        return;
      }
      yield value;
    }
  } finally {
    // Stopped early (the export ended or failed): the rest of the answer is not wanted.
    if (!ended) reader.cancel().catch(() => {});
    release(view);
  }
}

/** An answer that sent nothing for `idleMs` while it was being read broke off, as a reset would. */
export class AnswerStalled extends Error {}

/** `read`, unless no bytes come for `idleMs` (UPSTREAM_TIMEOUT_SECONDS): CKAN stopped sending. */
async function withinIdle<T>(read: Promise<T>, idleMs: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const idle = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AnswerStalled(`no bytes from CKAN for ${idleMs / 1000} s`)), idleMs);
  });
  try {
    return await Promise.race([read, idle]);
  } finally {
    clearTimeout(timer);
  }
}

/** Times a page whose answer broke off is asked for again before the export fails. */
export const BROKEN_PAGE_RETRIES = 2;

/** How a page read as it arrives is fetched and read. */
export interface StreamedFetch {
  client: CkanClient;
  body: SearchRequest;
  signal: AbortSignal;
  /** A fresh reader of the records string, per answer. */
  stream: () => RecordsStream;
  /** The whole-page reader, for an answer that could not be streamed (see StreamedAnswer). */
  reader: RecordsReader;
  /**
   * Set for a page held whole until its answer ends (asked from the table's end): a broken answer's
   * rows went nowhere yet, so the answer asked again is taken whole, after this drops them. Skipping
   * by count would splice two states of a table changed in between (a row deleted and one added:
   * a row twice, the count still right).
   */
  restart?: () => void;
}

/** The page's rows from `from` on (rows before it were handed on already). */
export function trailingRows(page: PassedBytes, from: number): PassedBytes {
  if (from <= 0) return page;
  if (from >= page.rows) return { bytes: page.bytes.subarray(page.bytes.length), rows: 0, ends: new Uint32Array(0) };
  const start = page.ends[from - 1]!;
  const ends = page.ends.slice(from);
  for (let k = 0; k < ends.length; k++) ends[k]! -= start;
  return { bytes: page.bytes.subarray(start), rows: page.rows - from, ends };
}

/** The same for a batch of either kind. */
export const laterRows = (batch: Batch, from: number): Batch =>
  Array.isArray(batch) ? batch.slice(from) : trailingRows(batch, from);

/** `records` without its first `skip` rows (an earlier answer handed them on), undefined if none are left. */
function withoutFirst(records: CopiedRecords, skip: number): CopiedRecords | undefined {
  if (skip >= records.page.rows) return undefined;
  // Its first `_id` is no longer its first row's.
  return skip > 0 ? { ...records, page: trailingRows(records.page, skip), firstId: undefined } : records;
}

/**
 * One page read as its answer arrives (`opened`: the request already in flight): whole rows as they
 * complete, then the answer's result (records read into rows already, or, for an answer that could
 * not be streamed, to read as before). A page whose answer breaks off (a network error, a time-out)
 * is asked for again, whole, up to BROKEN_PAGE_RETRIES times, and the rows already handed on are
 * skipped in the new answer: none twice, none lost. An answer that is not what CKAN writes fails at once.
 */
export async function* streamedPage(
  fetch: StreamedFetch,
  opened: Promise<Response>,
): AsyncGenerator<CopiedRecords, SearchResult, undefined> {
  let handed = 0;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0 && fetch.restart !== undefined) {
      fetch.restart();
      handed = 0;
    }
    const response = await (attempt === 0 ? opened : fetch.client.open(fetch.body, fetch.signal));
    const answer = new StreamedAnswer(fetch.stream());
    let seen = 0;
    /** The rows of `records` no earlier answer handed on. */
    const unseen = (records: CopiedRecords | undefined): CopiedRecords | undefined => {
      if (records === undefined) return undefined;
      const fresh = withoutFirst(records, handed - seen);
      seen += records.page.rows;
      if (fresh !== undefined) handed += fresh.page.rows;
      return fresh;
    };
    try {
      const body = response.body;
      if (body !== null) {
        for await (const chunk of chunksOf(body, fetch.client.timeoutMs)) {
          const fresh = unseen(answer.push(chunk));
          if (fresh !== undefined) yield fresh;
        }
      }
      const last = unseen(answer.finish());
      if (last !== undefined) yield last;
      const result = fetch.client.finished(response, answer.end(), answer.bytes, fetch.reader);
      const skip = handed - seen;
      // An answer read whole after one that broke off: its rows are cut where the other stopped.
      if (skip > 0 && result.copy !== undefined) {
        const copy = result.copy;
        result.copy = () => {
          const copied = copy();
          return { ...copied, page: trailingRows(copied.page, skip) };
        };
      } else if (skip > 0 && typeof result.records !== "string") {
        result.records = result.records.slice(skip);
      }
      return result;
    } catch (error) {
      fetch.signal.throwIfAborted();
      if (error instanceof HttpError) throw error;
      if (error instanceof NotTheJson)
        throw new UpstreamFailure(502, "CKAN's CSV records could not be read.", { cause: error });
      if (attempt >= BROKEN_PAGE_RETRIES) {
        throw new UpstreamFailure(
          502,
          `CKAN's answer broke off ${BROKEN_PAGE_RETRIES + 1} times (after ${answer.bytes} bytes the last time); the export stopped.`,
          { cause: error },
        );
      }
    }
  }
}
