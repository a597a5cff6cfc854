import { FormatSizeExceeded } from "../errors.ts";
import type { Admission } from "../ckan/page-budget.ts";
import type { Table } from "../ckan/table.ts";

// The encoded chunks on their way to the byte stream: what each sink's export shares between them.

/** The chunks; each one tells the isolate's admission the export moves. */
export async function* touching<T>(
  admission: Admission,
  chunks: AsyncGenerator<T, void, undefined>,
): AsyncGenerator<T, void, undefined> {
  for await (const chunk of chunks) {
    admission.touch();
    yield chunk;
  }
}

/**
 * A format with a size limit of its own (XLSX: one sheet in a ZIP without ZIP64) is refused as soon
 * as its first page shows the file would pass it, estimated from the rows' encoded text (an upper
 * bound of what compression leaves): before the first byte, for every sink, never after gigabytes
 * written to R2. Past the limit anyway (CKAN's count was short), it stops there.
 */
export async function* withinSize<T>(
  chunks: AsyncGenerator<T, void, undefined>,
  max: { limit: number; refusal: (estimate: number) => string },
  table: Pick<Table, "expectedRows">,
  progress: { readonly rows: number; readonly chars: number },
): AsyncGenerator<T, void, undefined> {
  let judged = false;
  for await (const chunk of chunks) {
    if (!judged && progress.rows > 0 && table.expectedRows !== undefined) {
      judged = true;
      const estimate = (progress.chars / progress.rows) * table.expectedRows;
      if (estimate > max.limit) throw new FormatSizeExceeded(max.refusal(estimate));
    }
    if (progress.chars > max.limit) throw new FormatSizeExceeded(max.refusal(progress.chars));
    yield chunk;
  }
}

/**
 * The chunks with the first one already encoded: what the first page tells about the whole file (a
 * size the format cannot hold) is an error status before any sink has a byte, as a failed first
 * page is. On such a failure the paging stops at once.
 */
export async function primed<T>(
  chunks: AsyncGenerator<T, void, undefined>,
  abort: AbortController,
): Promise<AsyncGenerator<T, void, undefined>> {
  let first: IteratorResult<T, void>;
  try {
    first = await chunks.next();
  } catch (error) {
    abort.abort();
    await chunks.return();
    throw error;
  }
  return (async function* () {
    try {
      if (first.done) return;
      yield first.value;
      yield* chunks;
    } finally {
      await chunks.return();
    }
  })();
}
