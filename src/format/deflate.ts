import { crc32, deflateRawSync } from "node:zlib";
import { adopt, joinedOwned } from "../rows/owned-bytes.ts";

/**
 * A raw deflate stream (RFC 1951) written in pieces: every DEFLATE_BLOCK bytes of input are deflated
 * on their own by the runtime's native zlib and end with a sync flush (byte-aligned, no final
 * block), so the pieces join into one stream, and the stream ends with an empty final block. No
 * deflater state outlives a piece: a stream begun in one invocation (a snapshot's write step) goes
 * on in the next from its `DeflateState` (CRC-32, sizes and the input short of a block), and since
 * blocks start at fixed offsets of the input, the bytes are the same however the input was cut
 * into chunks or steps. Each piece starts without the window before it: 1-3% larger than one
 * stream (measured on sheet XML and CSV).
 */

/** Input bytes per piece: what a step carries at most (as base64 in its state). */
export const DEFLATE_BLOCK = 64 * 1024;

/** zlib's levels as chosen per use (see README, "Formats": XLSX at level 2, gzip snapshots at 6). */
export const LEVEL = { fast: 2, default: 6 } as const;

const Z_SYNC_FLUSH = 2;
/** An empty final block with fixed codes: BFINAL 1, BTYPE 01, the end-of-block code. */
const FINAL_BLOCK = Uint8Array.of(0x03, 0x00);

/** A stream as far as it went, as JSON: what a later invocation goes on from. */
export type DeflateState = {
  /** CRC-32 of the input so far (ZIP's and gzip's). */
  crc: number;
  /** Input bytes so far, the tail's included. */
  size: number;
  /** Output bytes so far. */
  compressed: number;
  /** The input short of a whole block, base64: deflated with the bytes that follow it. */
  tail: string;
};

const toBase64 = (bytes: Uint8Array): string => {
  let text = "";
  for (let at = 0; at < bytes.length; at += 8192) text += String.fromCharCode(...bytes.subarray(at, at + 8192));
  return btoa(text);
};

const fromBase64 = (text: string): Uint8Array => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

export class BlockDeflater {
  readonly #level: number;
  readonly #tail = new Uint8Array(DEFLATE_BLOCK);
  #held = 0;
  #crc: number;
  #size: number;
  #compressed: number;

  constructor(level: number, from?: DeflateState) {
    this.#level = level;
    this.#crc = from?.crc ?? 0;
    this.#size = from?.size ?? 0;
    this.#compressed = from?.compressed ?? 0;
    if (from !== undefined && from.tail !== "") {
      const tail = fromBase64(from.tail);
      this.#tail.set(tail);
      this.#held = tail.length;
    }
  }

  get crc(): number {
    return this.#crc;
  }
  get size(): number {
    return this.#size;
  }
  get compressed(): number {
    return this.#compressed;
  }

  #piece(input: Uint8Array, pieces: Uint8Array[]): void {
    // zlib's result, the export's to free when it is the whole of its buffer (see adopt).
    const piece = adopt(deflateRawSync(input, { level: this.#level, finishFlush: Z_SYNC_FLUSH }));
    this.#compressed += piece.byteLength;
    pieces.push(piece);
  }

  /** The deflated pieces of the whole blocks `chunk` completes, as one chunk of owned bytes (maybe empty). */
  write(chunk: Uint8Array): Uint8Array {
    this.#crc = crc32(chunk, this.#crc);
    this.#size += chunk.byteLength;
    const pieces: Uint8Array[] = [];
    let at = 0;
    if (this.#held > 0) {
      at = Math.min(chunk.byteLength, DEFLATE_BLOCK - this.#held);
      this.#tail.set(chunk.subarray(0, at), this.#held);
      this.#held += at;
      if (this.#held < DEFLATE_BLOCK) return new Uint8Array(0);
      this.#piece(this.#tail, pieces);
      this.#held = 0;
    }
    for (; chunk.byteLength - at >= DEFLATE_BLOCK; at += DEFLATE_BLOCK)
      this.#piece(chunk.subarray(at, at + DEFLATE_BLOCK), pieces);
    this.#tail.set(chunk.subarray(at));
    this.#held = chunk.byteLength - at;
    return joinedOwned(pieces);
  }

  /** The stream's state, for a later invocation to go on from (nothing more to send: the tail goes with it). */
  save(): DeflateState {
    return {
      crc: this.#crc,
      size: this.#size,
      compressed: this.#compressed,
      tail: toBase64(this.#tail.subarray(0, this.#held)),
    };
  }

  /** The tail's piece and the final block: the stream's end. */
  end(): Uint8Array {
    const pieces: Uint8Array[] = [];
    if (this.#held > 0) this.#piece(this.#tail.subarray(0, this.#held), pieces);
    this.#held = 0;
    pieces.push(FINAL_BLOCK);
    this.#compressed += FINAL_BLOCK.byteLength;
    return joinedOwned(pieces);
  }
}
