import { concatBytes } from "../rows/bytes.ts";
import { adopt, release } from "../rows/owned-bytes.ts";
import { crc32, DEFLATED, ZipWriter } from "./zip.ts";

const utf8 = new TextEncoder();

/**
 * A byte stream packed as the last entry of a ZIP, deflated as it passes: `[path, bytes]` parts
 * stored first, then `entry` compressed by the runtime's native `CompressionStream("deflate-raw")`
 * (zlib), its CRC-32 and sizes in a data descriptor, then the central directory.
 *
 * It is a chain of streams, so backpressure holds end to end: the compressor takes input only as
 * its output is read, and memory stays at a few chunks and zlib's window whatever the size. When
 * the input errors, the output errors without the central directory: no reader takes it as whole.
 */
export function zipStream(
  stored: ReadonlyArray<readonly [string, string]>,
  entry: string,
): ReadableWritablePair<Uint8Array, Uint8Array> {
  const zip = new ZipWriter();
  let crc = 0;
  let size = 0;
  let compressed = 0;
  const deflate = new CompressionStream("deflate-raw");
  const deflating = deflate.writable.getWriter();
  // Each chunk is measured, handed to the compressor and freed once it has taken it (a write
  // resolves then): sheet XML is megabytes a page, garbage the small heap would seldom collect.
  const measure = new WritableStream<Uint8Array>(
    {
      async write(chunk) {
        crc = crc32(chunk, crc);
        size += chunk.byteLength;
        await deflating.write(chunk);
        release(chunk);
      },
      close: () => deflating.close(),
      abort: (reason) => deflating.abort(reason),
    },
    { highWaterMark: 1 },
  );
  const frame = new TransformStream<Uint8Array, Uint8Array>({
    start(controller) {
      controller.enqueue(
        concatBytes([
          ...stored.map(([path, text]) => zip.stored(path, utf8.encode(text))),
          zip.startEntry(entry, DEFLATED),
        ]),
      );
    },
    transform(chunk, controller) {
      compressed += chunk.byteLength;
      // Freed by the sink once written, like the export's own chunks.
      controller.enqueue(zip.data(adopt(chunk)));
    },
    flush(controller) {
      controller.enqueue(concatBytes([zip.finishEntry(crc, compressed, size), zip.close()]));
    },
  });
  return { writable: measure, readable: deflate.readable.pipeThrough(frame) };
}
