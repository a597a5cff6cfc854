import type { Table } from "../ckan/table.ts";
import { HttpError, toHttpError } from "../errors.ts";
import type { Encoder } from "../format/types.ts";
import { own, release } from "../rows/owned-bytes.ts";

/**
 * Rows encoded per chunk: a 32,000-row page of wide JSON records would otherwise be one string of
 * many megabytes (and its bytes beside it) at once.
 */
const ROWS_PER_CHUNK = 4096;

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
    if ("bytes" in batch) {
      if (pending !== "") yield pending;
      pending = "";
      progress.rows += batch.rows;
      // Bytes, not characters: the same for the ASCII most records are, and close enough for estimates.
      progress.chars += batch.bytes.byteLength;
      if (batch.bytes.byteLength > 0) yield batch.bytes;
      // Its bytes are the sink's to free once written; where its rows end is needed no more.
      release(batch.ends);
      continue;
    }
    for (let at = 0; at < batch.length; at += ROWS_PER_CHUNK) {
      // The first page (smaller than a chunk) goes out with the header, so the first chunk says how wide rows are.
      const rows = at === 0 && batch.length <= ROWS_PER_CHUNK ? batch : batch.slice(at, at + ROWS_PER_CHUNK);
      const encoded = encoder.page(rows);
      progress.rows += rows.length;
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
export function toByteStream(chunks: AsyncGenerator<string | Uint8Array, void, undefined>, hooks: ByteStreamHooks): ReadableStream<Uint8Array> {
  const utf8 = new TextEncoder();
  let bytes = 0;
  let failed: HttpError | undefined;
  /** After a failure: what is left to send before the stream errors. */
  const last: string[] = [];
  /** After a cut-off: the file ended whole, close once it is sent. */
  let closing = false;
  let finished = false;
  const finish = (error?: HttpError): void => {
    if (finished) return;
    finished = true;
    hooks.done?.(error === undefined ? { bytes } : { bytes, error });
  };

  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (closing) {
          controller.close();
          return;
        }
        if (failed !== undefined) {
          const text = last.shift();
          if (text === undefined) controller.error(failed);
          else controller.enqueue(utf8.encode(text));
          return;
        }
        try {
          const next = await chunks.next();
          if (next.done) {
            finish();
            controller.close();
            return;
          }
          const data = typeof next.value === "string" ? own(utf8.encode(next.value)) : next.value;
          bytes += data.byteLength;
          controller.enqueue(data);
        } catch (error) {
          failed = toHttpError(error);
          finish(failed);
          const reason = `${failed.message} (HTTP ${failed.status} after ${bytes} bytes).`;
          const ending = hooks.cutOff?.(failed, reason);
          if (ending !== undefined) {
            closing = true;
            const data = utf8.encode(ending);
            bytes += data.byteLength;
            controller.enqueue(data);
            return;
          }
          const trailer = hooks.failure(reason);
          // Nothing sent and nothing to add: no chunk to protect, error at once.
          if (trailer === "" && bytes === 0) {
            controller.error(failed);
            return;
          }
          last.push(...lastChunks(trailer));
          controller.enqueue(utf8.encode(last.shift()!));
        }
      },
      async cancel() {
        hooks.cancel?.();
        finish();
        await chunks.return();
      },
    },
    { highWaterMark: 0 },
  );
}
