// SHA-256 (FIPS 180-4) whose state can be saved after one step of a run and loaded in the next, so a
// file written over many invocations is hashed as its bytes go by and never read back. The runtime's
// own digests (crypto.subtle, DigestStream) cannot hand their state over, and WebAssembly hashers
// that can (hash-wasm) compile their module from bytes at run time, which Workers refuse.

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);
const INITIAL = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/** What a step hands the next: a few hundred bytes of JSON whatever the file's size. */
export interface Sha256State {
  /** The eight working words. */
  h: number[];
  /** Bytes hashed so far. */
  length: number;
  /** The bytes past the last whole 64-byte block, as hex (fewer than 64). */
  tail: string;
}

export class Sha256 {
  readonly #h: Int32Array;
  readonly #w = new Int32Array(64);
  readonly #block = new Uint8Array(64);
  #held = 0;
  #length: number;

  constructor(state?: Sha256State) {
    this.#h = new Int32Array(state?.h ?? INITIAL);
    this.#length = state?.length ?? 0;
    if (state !== undefined) {
      for (let i = 0; i < state.tail.length; i += 2)
        this.#block[this.#held++] = Number.parseInt(state.tail.slice(i, i + 2), 16);
    }
  }

  update(bytes: Uint8Array): this {
    let at = 0;
    const n = bytes.byteLength;
    this.#length += n;
    if (this.#held > 0) {
      const take = Math.min(64 - this.#held, n);
      this.#block.set(bytes.subarray(0, take), this.#held);
      this.#held += take;
      at = take;
      if (this.#held < 64) return this;
      this.#compress(this.#block, 0);
      this.#held = 0;
    }
    for (; at + 64 <= n; at += 64) this.#compress(bytes, at);
    if (at < n) {
      this.#block.set(bytes.subarray(at), 0);
      this.#held = n - at;
    }
    return this;
  }

  save(): Sha256State {
    let tail = "";
    for (let i = 0; i < this.#held; i++) tail += (this.#block[i] as number).toString(16).padStart(2, "0");
    return { h: Array.from(this.#h), length: this.#length, tail };
  }

  /** The digest as lower-case hex; the hasher is spent. */
  hex(): string {
    const bits = this.#length * 8;
    const pad = new Uint8Array((this.#held < 56 ? 64 : 128) - this.#held);
    pad[0] = 0x80;
    const view = new DataView(pad.buffer);
    view.setUint32(pad.length - 8, Math.floor(bits / 2 ** 32));
    view.setUint32(pad.length - 4, bits >>> 0);
    this.update(pad);
    let out = "";
    for (const word of this.#h) out += (word >>> 0).toString(16).padStart(8, "0");
    return out;
  }

  #compress(data: Uint8Array, at: number): void {
    const w = this.#w;
    const h = this.#h;
    for (let i = 0; i < 16; i++, at += 4) {
      w[i] =
        ((data[at] as number) << 24) |
        ((data[at + 1] as number) << 16) |
        ((data[at + 2] as number) << 8) |
        (data[at + 3] as number);
    }
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15] as number;
      const b = w[i - 2] as number;
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[i] = ((w[i - 16] as number) + s0 + (w[i - 7] as number) + s1) | 0;
    }
    let a = h[0] as number;
    let b = h[1] as number;
    let c = h[2] as number;
    let d = h[3] as number;
    let e = h[4] as number;
    let f = h[5] as number;
    let g = h[6] as number;
    let k = h[7] as number;
    for (let i = 0; i < 64; i++) {
      const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (k + s1 + ((e & f) ^ (~e & g)) + (K[i] as number) + (w[i] as number)) | 0;
      const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      k = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0] = ((h[0] as number) + a) | 0;
    h[1] = ((h[1] as number) + b) | 0;
    h[2] = ((h[2] as number) + c) | 0;
    h[3] = ((h[3] as number) + d) | 0;
    h[4] = ((h[4] as number) + e) | 0;
    h[5] = ((h[5] as number) + f) | 0;
    h[6] = ((h[6] as number) + g) | 0;
    h[7] = ((h[7] as number) + k) | 0;
  }
}
