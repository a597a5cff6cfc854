import { toHttpError, type HttpError } from "../errors.ts";
import type { ByteStreamHooks } from "./byte-stream.ts";

/**
 * A format whose encoded bytes go into a container (XLSX: a ZIP around the sheet): the encoded
 * stream is piped through it, so backpressure and a reader's leaving reach the paging as before,
 * and a failure errors the container's stream too. `done` reports the container's bytes, once:
 * at its end, when the export or the container itself fails, or when the reader leaves; with the
 * export's failure also when the container still ends whole (a cut-off XLSX sheet).
 */
export function packing(hooks: Required<ByteStreamHooks>, pack: ReadableWritablePair<Uint8Array, Uint8Array>) {
  let sent = 0;
  let finished = false;
  let failure: HttpError | undefined;
  const finish = (error?: unknown): void => {
    if (finished) return;
    finished = true;
    hooks.done(error === undefined ? { bytes: sent } : { bytes: sent, error: toHttpError(error) });
  };
  const encodedHooks: ByteStreamHooks = {
    failure: hooks.failure,
    cutOff: hooks.cutOff,
    cancel: () => {
      hooks.cancel();
      finish(failure);
    },
    // Reported when the container ends, so its bytes are counted whole.
    done: (outcome) => {
      failure ??= outcome.error;
    },
  };
  const wrap = (encoded: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> => {
    const reader = encoded.pipeThrough(pack).getReader();
    return new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          try {
            const { done, value } = await reader.read();
            if (done) {
              finish(failure);
              controller.close();
              return;
            }
            sent += value.byteLength;
            controller.enqueue(value);
          } catch (error) {
            // The export failed, or the container itself did (a deflate error, a size it cannot hold).
            finish(failure ?? error);
            controller.error(error);
          }
        },
        async cancel(reason) {
          finish(failure);
          await reader.cancel(reason);
        },
      },
      { highWaterMark: 0 },
    );
  };
  return { hooks: encodedHooks, wrap };
}
