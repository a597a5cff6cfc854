import { FormatSizeExceeded } from "../errors.ts";
import { concatBytes } from "../rows/bytes.ts";
import { release } from "../rows/owned-bytes.ts";
import { BlockDeflater, type DeflateState } from "./deflate.ts";
import { DEFLATED, WAY_OUT, ZIP_ENTRY_LIMIT, ZipWriter } from "./zip.ts";

const utf8 = new TextEncoder();

/**
 * A ZIP whose last entry is a byte stream deflated as it passes (in pieces: see deflate.ts): `[path,
 * text]` parts stored first, then `entry`, its CRC-32 and sizes in a data descriptor, then the
 * central directory. What it carries from one invocation to the next is the deflater's state alone
 * (the stored parts and the entry's header are the same every time): a snapshot's write steps give
 * the bytes one export in one go gives.
 */
export class DeflatedZip {
  readonly #zip = new ZipWriter();
  readonly #start: Uint8Array;
  readonly #deflater: BlockDeflater;

  constructor(stored: ReadonlyArray<readonly [string, string]>, entry: string, level: number, from?: DeflateState) {
    this.#start = concatBytes([
      ...stored.map(([path, text]) => this.#zip.stored(path, utf8.encode(text))),
      this.#zip.startEntry(entry, DEFLATED),
    ]);
    this.#deflater = new BlockDeflater(level, from);
    if (from !== undefined) this.#zip.sent(from.compressed);
  }

  /** The stored parts and the entry's header: the archive's first bytes. */
  begin(): Uint8Array {
    return this.#start;
  }

  /** The entry's deflated bytes for `chunk` (maybe none yet). */
  write(chunk: Uint8Array): Uint8Array {
    const deflated = this.#zip.data(this.#deflater.write(chunk));
    if (this.#deflater.size > ZIP_ENTRY_LIMIT)
      throw new FormatSizeExceeded(`The sheet passed 4 GiB, the most a ZIP entry without ZIP64 holds.${WAY_OUT}`);
    return deflated;
  }

  /** What a later invocation goes on from. */
  save(): DeflateState {
    return this.#deflater.save();
  }

  /** The entry's last bytes, its data descriptor and the central directory: the archive is whole. */
  end(): Uint8Array {
    const last = this.#zip.data(this.#deflater.end());
    const d = this.#deflater;
    return concatBytes([last, this.#zip.finishEntry(d.crc, d.compressed, d.size), this.#zip.close()]);
  }
}

/**
 * A byte stream packed as the last entry of a ZIP (see DeflatedZip), as a stream: backpressure holds
 * end to end, and memory stays at a chunk and a block whatever the size. When the input errors, the
 * output errors without the central directory: no reader takes it as whole.
 */
export function zipStream(
  stored: ReadonlyArray<readonly [string, string]>,
  entry: string,
  level: number,
): ReadableWritablePair<Uint8Array, Uint8Array> {
  const zip = new DeflatedZip(stored, entry, level);
  return new TransformStream<Uint8Array, Uint8Array>({
    start: (controller) => controller.enqueue(zip.begin()),
    transform(chunk, controller) {
      const out = zip.write(chunk);
      // Sheet XML is megabytes a page, garbage the small heap would seldom collect: freed once deflated.
      release(chunk);
      if (out.byteLength > 0) controller.enqueue(out);
    },
    flush: (controller) => controller.enqueue(zip.end()),
  });
}
