import { ownedBytes } from "../rows/owned-bytes.ts";

const utf8 = new TextEncoder();

/**
 * Text written straight into one reused byte buffer, handed out as a chunk of owned bytes: for an
 * encoder whose page would otherwise be one string of megabytes built from millions of small ones
 * (garbage for V8 to collect, then encoded to UTF-8 in one more pass).
 */
export class ByteWriter {
  #bytes = new Uint8Array(1 << 16);
  #at = 0;

  #room(n: number): void {
    if (this.#at + n <= this.#bytes.length) return;
    const bigger = new Uint8Array(Math.max(this.#bytes.length * 2, this.#at + n));
    bigger.set(this.#bytes.subarray(0, this.#at));
    this.#bytes = bigger;
  }

  /** Any text, as UTF-8. */
  text(text: string): void {
    const n = text.length;
    this.#room(3 * n);
    const bytes = this.#bytes;
    let at = this.#at;
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c >= 0x80) {
        // Not ASCII: the rest through the encoder (surrogate pairs, lone surrogates as U+FFFD).
        at += utf8.encodeInto(text.slice(i), bytes.subarray(at)).written;
        break;
      }
      bytes[at++] = c;
    }
    this.#at = at;
  }

  /** Bytes known in advance (markup). */
  bytes(bytes: Uint8Array): void {
    this.#room(bytes.length);
    this.#bytes.set(bytes, this.#at);
    this.#at += bytes.length;
  }

  get length(): number {
    return this.#at;
  }

  /** What was written, as a chunk of its own (the buffer is reused). */
  take(): Uint8Array<ArrayBuffer> {
    const out = ownedBytes(this.#at);
    out.set(this.#bytes.subarray(0, this.#at));
    this.#at = 0;
    return out;
  }
}
