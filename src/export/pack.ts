import type { ByteStreamHooks } from "./encode.ts";

/**
 * A format whose encoded bytes go into a container (XLSX: a ZIP around the sheet): the encoded
 * stream is piped through it, so backpressure and a reader's leaving reach the paging as before,
 * and a failure errors the container's stream too. `done` then reports the container's bytes: at
 * its end, or at once when the export fails or its reader leaves (the container's end never comes).
 */
export function packing(hooks: Required<ByteStreamHooks>, pack: ReadableWritablePair<Uint8Array, Uint8Array>) {
  let sent = 0;
  let cancelled = false;
  const encodedHooks: ByteStreamHooks = {
    failure: hooks.failure,
    cancel: () => {
      cancelled = true;
      hooks.cancel();
    },
    done: (outcome) => {
      if (outcome.error !== undefined || cancelled) hooks.done({ ...outcome, bytes: sent });
    },
  };
  const count = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      sent += chunk.byteLength;
      controller.enqueue(chunk);
    },
    flush: () => hooks.done({ bytes: sent }),
  });
  const wrap = (encoded: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> => encoded.pipeThrough(pack).pipeThrough(count);
  return { hooks: encodedHooks, wrap };
}
