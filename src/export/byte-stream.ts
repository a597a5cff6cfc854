import type { Table } from "../ckan/table.ts";
import type { Batch } from "../rows/batch.ts";
import { ClientTooSlow, type HttpError, toHttpError } from "../errors.ts";
import type { Encoder } from "../format/types.ts";
import { own, release } from "../rows/owned-bytes.ts";

/**
 * Rows encoded per chunk: a 32,000-row page of wide JSON records would otherwise be one string of
 * many megabytes (and its bytes beside it) at once.
 */
const ROWS_PER_CHUNK = 4096;

/**
 * A page encoded a chunk at a time, with each chunk's rows: rows ROWS_PER_CHUNK at a time, or the
 * cells of a pass-through page the encoder writes (Parquet's, `Encoder.passed`), freed once encoded.
 */
function* encodedChunks(encoder: Encoder<string | Uint8Array>, batch: Batch): Generator<[number, string | Uint8Array]> {
  if ("bytes" in batch) {
    const encoded = encoder.passed!(batch);
    release(batch.bytes);
    release(batch.ends);
    yield [batch.rows, encoded];
    return;
  }
  for (let at = 0; at < batch.length; at += ROWS_PER_CHUNK) {
    // The first page (smaller than a chunk) goes out with the header, so the first chunk says how wide rows are.
    const rows = at === 0 && batch.length <= ROWS_PER_CHUNK ? batch : batch.slice(at, at + ROWS_PER_CHUNK);
    yield [rows.length, encoder.page(rows)];
  }
}

/** Encoded text of a whole export (or bytes, for pages copied as bytes), a chunk at a time; never more than a page held. */
export async function* encodeTable(
  table: Table,
  encoder: Encoder<string | Uint8Array>,
  progress: { rows: number; chars: number },
): AsyncGenerator<string | Uint8Array, void, undefined> {
  const begin = encoder.begin();
  let pending = typeof begin === "string" ? begin : "";
  if (typeof begin !== "string" && begin.byteLength > 0) yield begin;
  for await (const batch of table.pages) {
    if ("bytes" in batch && encoder.passed === undefined) {
      if (pending !== "") yield pending;
      pending = "";
      progress.rows += batch.rows;
      encoder.copied?.(batch.rows);
      // Bytes, not characters: the same for the ASCII most records are, and close enough for estimates.
      progress.chars += batch.bytes.byteLength;
      if (batch.bytes.byteLength > 0) yield batch.bytes;
      // Its bytes are the sink's to free once written; where its rows end is needed no more.
      release(batch.ends);
      continue;
    }
    for (const [rows, encoded] of encodedChunks(encoder, batch)) {
      progress.rows += rows;
      if (typeof encoded !== "string") {
        // A binary format's bytes (Parquet's row groups): sent as they are, after any text before them.
        if (pending !== "") yield pending;
        pending = "";
        progress.chars += encoded.byteLength;
        if (encoded.byteLength > 0) yield encoded;
        continue;
      }
      const text = pending + encoded;
      pending = "";
      progress.chars += text.length;
      if (text !== "") yield text;
    }
  }
  const end = encoder.end();
  if (typeof end !== "string") {
    if (pending !== "") yield pending;
    if (end.byteLength > 0) yield end;
    return;
  }
  if (pending + end !== "") yield pending + end;
}

/**
 * How long a download may wait on its reader: a chunk not taken within `stallMs` stops the export
 * (a client that stopped reading), and so does a reader that, over `stallMs` of waiting, took less
 * than `minBytesPerSecond` (a trickle that would hold the isolate's slot for ever).
 */
export interface StallWatch {
  stallMs: number;
  minBytesPerSecond: number;
}

/** The least a reader must take per second of waiting, averaged over the stall time (see README, "Security"). */
export const MIN_BYTES_PER_SECOND = 4096;

const stalled = (watch: StallWatch): HttpError =>
  new ClientTooSlow(
    `The download made no progress for ${watch.stallMs / 1000} s (the client stopped reading), so the export was stopped.`,
  );

const tooSlow = (watch: StallWatch): HttpError =>
  new ClientTooSlow(
    `The download was read slower than ${watch.minBytesPerSecond} bytes a second over ${watch.stallMs / 1000} s, so the export was stopped.`,
  );

/**
 * Times a reader: `given` when a chunk is handed to it (the timer starts), `taken` when it asks for
 * the next (was it in time, and over the stall time, did it take at least the minimum rate?).
 * Without a watch (or with a stall time of 0) it never fires.
 */
export class ReaderWatch {
  readonly #watch: StallWatch | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #since: number | undefined;
  #chunk = 0;
  #waited = { ms: 0, bytes: 0 };

  constructor(watch: StallWatch | undefined) {
    this.#watch = watch !== undefined && watch.stallMs > 0 ? watch : undefined;
  }

  given(bytes: number, onStall: (error: HttpError) => void): void {
    const watch = this.#watch;
    if (watch === undefined) return;
    this.disarm();
    this.#chunk = bytes;
    this.#since = Date.now();
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      onStall(stalled(watch));
    }, watch.stallMs);
  }

  /** The reader asks for more: undefined while it keeps up, else the error that stops it. */
  taken(): HttpError | undefined {
    this.disarm();
    const watch = this.#watch;
    if (watch === undefined || this.#since === undefined) return undefined;
    this.#waited = { ms: this.#waited.ms + Date.now() - this.#since, bytes: this.#waited.bytes + this.#chunk };
    this.#since = undefined;
    if (this.#waited.ms < watch.stallMs) return undefined;
    const slow = this.#waited.bytes < (watch.minBytesPerSecond * this.#waited.ms) / 1000;
    this.#waited = { ms: 0, bytes: 0 };
    return slow ? tooSlow(watch) : undefined;
  }

  disarm(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

/**
 * A stream handed on as it is, its reader timed (see ReaderWatch): a reader that stalls or trickles
 * gets an error, and the source is cancelled (for a tee's branch: the other branch goes on, and the
 * bytes held for this one are let go).
 */
export function watchedReader(
  source: ReadableStream<Uint8Array>,
  watch: StallWatch,
  onStopped?: (error: HttpError) => void,
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  const watchdog = new ReaderWatch(watch);
  let stopped = false;
  const stop = (controller: ReadableStreamDefaultController<Uint8Array>, error: HttpError): void => {
    if (stopped) return;
    stopped = true;
    watchdog.disarm();
    onStopped?.(error);
    controller.error(error);
    void reader.cancel(error).catch(() => {});
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const slow = watchdog.taken();
        if (slow !== undefined) return stop(controller, slow);
        try {
          const { done, value } = await reader.read();
          if (stopped) return;
          if (done) {
            watchdog.disarm();
            controller.close();
            return;
          }
          controller.enqueue(value);
          watchdog.given(value.byteLength, (error) => stop(controller, error));
        } catch (error) {
          watchdog.disarm();
          if (!stopped) controller.error(error);
        }
      },
      cancel: (reason) => {
        watchdog.disarm();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

export interface ByteStreamHooks {
  /** Text that marks a cut-off download as incomplete ("" when stopping is enough). */
  failure(reason: string): string;
  /** The end of a whole file that says it stopped short (see Encoder.cutOff), or undefined. */
  cutOff?(error: HttpError, reason: string): string | undefined;
  /** The reader went away: stop upstream work still in flight. */
  cancel?(): void;
  /** Called once when the stream ends, however it ends. */
  done?(outcome: { bytes: number; error?: HttpError }): void;
}

/**
 * What a failed export sends last, one chunk per pull, before the stream errors: the failure text
 * without its line break, then the line break alone ("\n" when it has none; for JSON, whose failure
 * text is empty, only "\n", whitespace after the unclosed array).
 *
 * The line break goes alone because over HTTP the last chunk before an error is lost. workerd's
 * body pump asks for the next chunk before the one it took last has gone out on the connection;
 * when that read errors, the response is aborted and that chunk is dropped (traced: it never
 * reaches a write(2)), while every chunk before it goes out, at each hop of `wrangler dev`, under
 * concurrent requests too. Erroring later (on a timer) only narrows that race: a zero-delay timer
 * still lost the failure text under a few concurrent exports. So the chunk that goes last is one
 * whose loss changes nothing: the failure text is the body's last line with or without it (and
 * JSON keeps its last rows), and the broken transfer follows.
 */
function lastChunks(failureText: string): string[] {
  const lineBreak = /\r?\n$/.exec(failureText)?.[0];
  if (lineBreak === undefined) return failureText === "" ? ["\n"] : [failureText, "\n"];
  const line = failureText.slice(0, -lineBreak.length);
  return line === "" ? [lineBreak] : [line, lineBreak];
}

/**
 * A pull-driven byte stream: a page is fetched and encoded only when the reader wants more, and a
 * reader that goes away cancels the upstream paging. A failure after bytes were sent writes the
 * failure text (see `lastChunks`), then errors the stream, so no client mistakes a cut-off file for
 * a complete one: it gets the failure text as the last line, then a broken transfer. A format that
 * can end a whole file saying it stopped short (`cutOff`) ends normally instead, the failure still
 * reported to `done`.
 */
export function toByteStream(
  chunks: AsyncGenerator<string | Uint8Array, void, undefined>,
  hooks: ByteStreamHooks,
  watch?: StallWatch,
): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(new ByteSource(chunks, hooks, watch), { highWaterMark: 0 });
}

type Controller = ReadableStreamDefaultController<Uint8Array>;

/** toByteStream's source: what was sent, and how the stream ends (whole, cut off, stopped or failed). */
class ByteSource implements UnderlyingSource<Uint8Array> {
  readonly #utf8 = new TextEncoder();
  readonly #chunks: AsyncGenerator<string | Uint8Array, void, undefined>;
  readonly #hooks: ByteStreamHooks;
  readonly #watchdog: ReaderWatch;
  #bytes = 0;
  #failed: HttpError | undefined;
  /** After a failure: what is left to send before the stream errors. */
  readonly #last: string[] = [];
  /** After a cut-off: the file ended whole, close once it is sent. */
  #closing = false;
  #finished = false;
  #ended = false;

  constructor(
    chunks: AsyncGenerator<string | Uint8Array, void, undefined>,
    hooks: ByteStreamHooks,
    watch: StallWatch | undefined,
  ) {
    this.#chunks = chunks;
    this.#hooks = hooks;
    this.#watchdog = new ReaderWatch(watch);
  }

  async pull(controller: Controller): Promise<void> {
    const slow = this.#watchdog.taken();
    if (this.#closing) return this.#close(controller);
    if (this.#failed !== undefined) return this.#sendLast(controller, this.#failed);
    if (slow !== undefined) return this.#stop(controller, slow);
    try {
      const next = await this.#chunks.next();
      if (next.done) {
        this.#finish();
        return this.#close(controller);
      }
      const data = typeof next.value === "string" ? own(this.#utf8.encode(next.value)) : next.value;
      this.#bytes += data.byteLength;
      this.#enqueue(controller, data);
    } catch (error) {
      this.#fail(controller, toHttpError(error));
    }
  }

  async cancel(): Promise<void> {
    this.#ended = true;
    this.#watchdog.disarm();
    this.#hooks.cancel?.();
    this.#finish();
    await this.#chunks.return();
  }

  #finish(error?: HttpError): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#hooks.done?.(error === undefined ? { bytes: this.#bytes } : { bytes: this.#bytes, error });
  }

  #enqueue(controller: Controller, data: Uint8Array): void {
    controller.enqueue(data);
    this.#watchdog.given(data.byteLength, (error) => {
      if (this.#ended) return;
      // Stopped already (its last line waits, untaken): end the connection now.
      if (this.#failed !== undefined) return this.#end(controller, this.#failed);
      this.#stop(controller, error);
    });
  }

  #close(controller: Controller): void {
    this.#ended = true;
    controller.close();
  }

  #end(controller: Controller, error: HttpError): void {
    this.#ended = true;
    this.#watchdog.disarm();
    controller.error(error);
  }

  #reason(error: HttpError): string {
    return `${error.message} (HTTP ${error.status} after ${this.#bytes} bytes).`;
  }

  /** The failure text goes out a chunk a pull (see `lastChunks`), then the stream errors. */
  #sendLast(controller: Controller, failed: HttpError): void {
    const text = this.#last.shift();
    if (text === undefined) this.#end(controller, failed);
    else this.#enqueue(controller, this.#utf8.encode(text));
  }

  #startLast(controller: Controller, trailer: string): void {
    this.#last.push(...lastChunks(trailer));
    this.#enqueue(controller, this.#utf8.encode(this.#last.shift()!));
  }

  /**
   * The client stopped reading (or reads too slowly): the export stops as if upstream had failed.
   * Paging stops and its pages are let go, the isolate's slot is freed, the last line waits for a
   * reader that may never come (the watchdog ends the stream if none does).
   */
  #stop(controller: Controller, error: HttpError): void {
    this.#failed = error;
    this.#finish(error);
    this.#hooks.cancel?.();
    void this.#chunks.return().catch(() => {});
    this.#startLast(controller, this.#hooks.failure(this.#reason(error)));
  }

  /** The export failed: a format that can end its file saying so does; the others send their failure text. */
  #fail(controller: Controller, failed: HttpError): void {
    this.#failed = failed;
    this.#finish(failed);
    const reason = this.#reason(failed);
    const ending = this.#hooks.cutOff?.(failed, reason);
    if (ending !== undefined) {
      this.#closing = true;
      const data = this.#utf8.encode(ending);
      this.#bytes += data.byteLength;
      this.#enqueue(controller, data);
      return;
    }
    const trailer = this.#hooks.failure(reason);
    // Nothing sent and nothing to add: no chunk to protect, error at once.
    if (trailer === "" && this.#bytes === 0) this.#end(controller, failed);
    else this.#startLast(controller, trailer);
  }
}
