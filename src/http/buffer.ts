import { HttpError, toHttpError } from "../errors.ts";
import { ZIP_ENTRY_LIMIT } from "../format/zip.ts";
import type { ExportRun } from "../export/run.ts";
import { release } from "../rows/owned-bytes.ts";

/** The chunks in one buffer; each chunk is freed once copied. */
function concat(chunks: Uint8Array[], length: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
    release(chunk);
  }
  return out;
}

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
export async function readBody(run: ExportRun, bufferBytes: number): Promise<ExportBody> {
  const { body, table, progress } = run;
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  let estimate = Number.POSITIVE_INFINITY;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { whole: concat(chunks, length) };
      chunks.push(value);
      length += value.byteLength;
      if (estimate === Number.POSITIVE_INFINITY && table.expectedRows !== undefined) {
        // From the first page's bytes; for a container (compressed), from the first rows' encoded
        // text, an upper bound of what compression leaves.
        const perRow = run.packed ? (progress.rows > 0 ? progress.chars / progress.rows : undefined) : table.firstPageRows > 0 ? value.byteLength / table.firstPageRows : undefined;
        if (perRow !== undefined) estimate = perRow * table.expectedRows;
        // Found out before the first byte rather than after gigabytes: a ZIP without ZIP64 cannot hold it.
        if (run.packed && estimate > ZIP_ENTRY_LIMIT) {
          await reader.cancel();
          throw new HttpError(
            400,
            `This workbook's sheet would be about ${Math.round(estimate / 2 ** 30)} GiB, more than the 4 GiB one XLSX sheet holds. Use a smaller limit, fewer fields, or CSV.`,
            { parameter: "limit" },
          );
        }
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
