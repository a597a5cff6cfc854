// Snappy's raw block format (what Parquet's SNAPPY codec holds): the uncompressed length as a
// varint, then literals and back-references. Written as the reference compressor does: the input in
// fragments of 64 KiB, each with a hash table of its own 4-byte sequences (so every offset fits two
// bytes), lookups spaced further apart the longer no match turns up; output into one buffer sized
// for the worst case once, with no call per byte. hyparquet-writer's own compressor (snappyjs) took
// about half the Parquet writer's CPU.

const FRAGMENT = 1 << 16;
const MAX_TABLE_BITS = 14;
/** Bytes at a fragment's end never searched for a match (the reference's input margin). */
const MARGIN = 15;
const MIN_FRAGMENT_FOR_MATCHES = 17;

let table = new Uint16Array(1 << MAX_TABLE_BITS);
let out = new Uint8Array(0);

/** The most bytes a block of `n` input bytes can take (the reference's MaxCompressedLength). */
export const maxCompressedLength = (n: number): number => 32 + n + Math.floor(n / 6);

/** The input being compressed, read 4 bytes at a time (a DataView read is one load; four byte reads were a fifth slower). */
let view: DataView = new DataView(new ArrayBuffer(0));
const load32 = (at: number): number => view.getInt32(at, true);

function literal(input: Uint8Array, from: number, to: number, op: number): number {
  const n = to - from;
  const value = n - 1;
  if (value < 60) {
    out[op++] = value << 2;
  } else if (value < 0x100) {
    out[op++] = 60 << 2;
    out[op++] = value;
  } else if (value < 0x10000) {
    out[op++] = 61 << 2;
    out[op++] = value & 0xff;
    out[op++] = value >>> 8;
  } else if (value < 0x1000000) {
    out[op++] = 62 << 2;
    out[op++] = value & 0xff;
    out[op++] = (value >>> 8) & 0xff;
    out[op++] = value >>> 16;
  } else {
    out[op++] = 63 << 2;
    out[op++] = value & 0xff;
    out[op++] = (value >>> 8) & 0xff;
    out[op++] = (value >>> 16) & 0xff;
    out[op++] = value >>> 24;
  }
  if (n < 16) {
    for (let i = from; i < to; i++) out[op++] = input[i]!;
  } else {
    out.set(input.subarray(from, to), op);
    op += n;
  }
  return op;
}

/** A copy of 4 to 64 bytes from `offset` back (offset < 65,536). */
function copyUpTo64(offset: number, length: number, op: number): number {
  if (length < 12 && offset < 2048) {
    out[op++] = 1 | ((length - 4) << 2) | ((offset >>> 8) << 5);
    out[op++] = offset & 0xff;
  } else {
    out[op++] = 2 | ((length - 1) << 2);
    out[op++] = offset & 0xff;
    out[op++] = offset >>> 8;
  }
  return op;
}

function copy(offset: number, length: number, op: number): number {
  let left = length;
  while (left >= 68) {
    op = copyUpTo64(offset, 64, op);
    left -= 64;
  }
  if (left > 64) {
    op = copyUpTo64(offset, 60, op);
    left -= 60;
  }
  return copyUpTo64(offset, left, op);
}

/** One fragment [start, end) of `input`, its output from `op`; returns where the output ends. */
function fragment(input: Uint8Array, start: number, end: number, op: number): number {
  const size = end - start;
  if (size < MIN_FRAGMENT_FOR_MATCHES) return size > 0 ? literal(input, start, end, op) : op;
  let bits = 8;
  while (bits < MAX_TABLE_BITS && 1 << bits < size) bits++;
  const shift = 32 - bits;
  table.fill(0, 0, 1 << bits);
  const limit = end - MARGIN;
  let emitted = start;
  let ip = start + 1;
  let nextHash = Math.imul(load32(ip), 0x1e35a7bd) >>> shift;
  for (;;) {
    // Look for a match, skipping faster the longer none turns up.
    let skip = 32;
    let next = ip;
    let candidate = 0;
    do {
      ip = next;
      const hash = nextHash;
      next = ip + (skip++ >>> 5);
      if (next > limit) return emitted < end ? literal(input, emitted, end, op) : op;
      nextHash = Math.imul(load32(next), 0x1e35a7bd) >>> shift;
      candidate = start + table[hash]!;
      table[hash] = ip - start;
    } while (load32(ip) !== load32(candidate));

    op = literal(input, emitted, ip, op);
    // Matches back to back, each followed straight away by the next one's lookup.
    for (;;) {
      const base = ip;
      let matched = 4;
      // Four bytes at a time, then the last few one by one.
      while (ip + matched + 4 <= end && view.getInt32(ip + matched, true) === view.getInt32(candidate + matched, true))
        matched += 4;
      while (ip + matched < end && input[ip + matched] === input[candidate + matched]) matched++;
      ip += matched;
      op = copy(base - candidate, matched, op);
      emitted = ip;
      if (ip >= limit) return emitted < end ? literal(input, emitted, end, op) : op;
      table[Math.imul(load32(ip - 1), 0x1e35a7bd) >>> shift] = ip - 1 - start;
      const hash = Math.imul(load32(ip), 0x1e35a7bd) >>> shift;
      candidate = start + table[hash]!;
      table[hash] = ip - start;
      if (load32(ip) !== load32(candidate)) break;
    }
    ip++;
    nextHash = Math.imul(load32(ip), 0x1e35a7bd) >>> shift;
  }
}

/** `input` as one Snappy block (a copy of its own). */
export const snappyCompress = (input: Uint8Array): Uint8Array => snappyBlock(input).slice();

/** `input` as one Snappy block, in the compressor's own buffer: valid until its next call. */
export function snappyBlock(input: Uint8Array): Uint8Array {
  const need = maxCompressedLength(input.length);
  if (out.length < need) out = new Uint8Array(Math.max(need, out.length * 2));
  if (table.length < 1 << MAX_TABLE_BITS) table = new Uint16Array(1 << MAX_TABLE_BITS);
  view = new DataView(input.buffer, input.byteOffset, input.byteLength);
  let op = 0;
  let n = input.length;
  do {
    out[op++] = (n & 0x7f) | (n > 0x7f ? 0x80 : 0);
    n >>>= 7;
  } while (n > 0);
  for (let at = 0; at < input.length; at += FRAGMENT)
    op = fragment(input, at, Math.min(input.length, at + FRAGMENT), op);
  return out.subarray(0, op);
}
