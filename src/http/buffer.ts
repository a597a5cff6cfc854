import { concatBytes } from "../rows/bytes.ts";
import { toHttpError } from "../errors.ts";
import type { OpenExport } from "../export/pipeline.ts";
import { release } from "../rows/owned-bytes.ts";

/** An export either read whole (small: it gets Content-Length, an ETag, the cache) or streaming. */
export type ExportBody =
  | { whole: Uint8Array<ArrayBuffer> }
  /** `estimate`: the whole export's expected size in bytes, from its first page (Infinity: unknown). */
  | { stream: ReadableStream<Uint8Array>; estimate: number };

/**
 * An export expected to fit in `bufferBytes` is read whole first, so an upstream failure still
 * becomes a proper error status (thrown here). A larger one is streamed as soon as its first page is
 * encoded: its first byte should not wait for a buffer to fill.
 */
export async function readBody(opened: OpenExport, bufferBytes: number): Promise<ExportBody> {
  const { body, table, progress } = opened;
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  let estimate = Number.POSITIVE_INFINITY;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        const whole = concatBytes(chunks);
        // Each chunk copied into the whole is freed now, not at the next collection.
        for (const chunk of chunks) if (chunk !== whole) release(chunk);
        return { whole };
      }
      chunks.push(value);
      length += value.byteLength;
      if (estimate === Number.POSITIVE_INFINITY && table.expectedRows !== undefined) {
        // From the first page's bytes; for a container (compressed), from the first rows' encoded
        // text, an upper bound of what compression leaves.
        const perRow = opened.packed
          ? progress.rows > 0
            ? progress.chars / progress.rows
            : undefined
          : table.firstPageRows > 0
            ? value.byteLength / table.firstPageRows
            : undefined;
        if (perRow !== undefined) estimate = perRow * table.expectedRows;
        if (estimate > bufferBytes && estimate !== Number.POSITIVE_INFINITY) break;
      }
      if (length > bufferBytes) break;
    }
  } catch (error) {
    throw toHttpError(error);
  }
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const buffered = chunks.shift();
        if (buffered !== undefined) return controller.enqueue(buffered);
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  return { stream, estimate: Math.max(estimate, length) };
}
