import { release } from "../rows/owned-bytes.ts";

declare const IdentityTransformStream: (new () => TransformStream<Uint8Array, Uint8Array>) | undefined;

/**
 * What the runtime is told when a download stops short: no upstream text, no secret. `retryable`
 * makes workerd take it for a dropped connection (a DISCONNECTED exception, as a reset socket gives):
 * it then closes the client's connection without the second report an error would get from the
 * HTTP server (`Uncaught exception: ... remote.jsg.Error`). One report stays: workerd hands every
 * failure of a body that JavaScript writes to the inspector as `Uncaught` (in production, to the
 * trace); a body that errors cannot avoid it, and a body that ends without error would look whole.
 */
export class DownloadCut extends Error {
  readonly retryable = true;
  constructor() {
    super("download cut short (the request's log line says why)");
    this.name = "DownloadCut";
  }
}

/**
 * The body as the runtime sends it, each chunk freed (see rows/owned-bytes.ts) as soon as the
 * runtime has taken it. A ReadableStream gives no such moment (the runtime may still be writing the
 * chunk it read last when it asks for the next), but a write into the runtime's own
 * IdentityTransformStream resolves only once its reader has taken every byte: the loop below
 * writes one chunk at a time and frees it then (`free: false` for a tee's branch, whose chunks the
 * other branch reads too). The source's failure aborts the body (a broken transfer, as before); a
 * client that leaves cancels the source.
 */
export function freedOnceWritten(
  source: ReadableStream<Uint8Array>,
  options: { free: boolean } = { free: true },
): ReadableStream<Uint8Array> {
  // Outside workerd (Node runs the pipeline in specs and bench:profile) there is nothing to gain.
  if (typeof IdentityTransformStream === "undefined") return source;
  const pipe = new IdentityTransformStream();
  const writer = pipe.writable.getWriter();
  const reader = source.getReader();
  const pump = async (): Promise<void> => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        await writer.write(value);
        if (options.free) release(value);
      }
      await writer.close();
    } catch (error) {
      // The runtime prints what a body is aborted with, outside the logger and its redactor: it gets
      // words of ours only. Why the export stopped is in the request's log line and the body's last line.
      await Promise.allSettled([writer.abort(new DownloadCut()), reader.cancel(error)]);
    }
  };
  void pump();
  return pipe.readable;
}
