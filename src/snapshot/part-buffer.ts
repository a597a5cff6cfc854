import { ownedBytes, release } from "../rows/owned-bytes.ts";

/**
 * Bytes gathered into parts of one size (R2's multipart parts are equal but the last): `add` copies
 * a chunk in and hands each part that fills to `upload`; what has not filled one is `held()`. One
 * part's buffer at a time, freed once uploaded.
 */
export class PartBuffer {
  readonly size: number;
  #part: Uint8Array<ArrayBuffer>;
  #filled = 0;

  /** `carried`: bytes an earlier invocation gathered and did not upload (less than a part). */
  constructor(size: number, carried?: Uint8Array) {
    this.size = size;
    this.#part = ownedBytes(size);
    if (carried !== undefined) {
      this.#part.set(carried);
      this.#filled = carried.byteLength;
    }
  }

  async add(bytes: Uint8Array, upload: (part: Uint8Array) => Promise<void>): Promise<void> {
    for (let at = 0; at < bytes.byteLength; ) {
      const n = Math.min(this.size - this.#filled, bytes.byteLength - at);
      this.#part.set(bytes.subarray(at, at + n), this.#filled);
      this.#filled += n;
      at += n;
      if (this.#filled === this.size) await this.flush(upload);
    }
  }

  /** The bytes gathered and not yet uploaded (a view: valid until the next `add` or `flush`). */
  held(): Uint8Array {
    return this.#part.subarray(0, this.#filled);
  }

  /** Uploads what is gathered as one part (the last one may be short), then starts a new part. */
  async flush(upload: (part: Uint8Array) => Promise<void>): Promise<void> {
    await upload(this.held());
    // Uploaded: freed now, not at a collection the small heap seldom needs (see owned-bytes.ts).
    release(this.#part);
    this.#part = ownedBytes(this.size);
    this.#filled = 0;
  }
}
