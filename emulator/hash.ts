// Generated cells are pure functions of (column, row index): a million-row table costs no memory
// and any page can be produced without touching the rows before it.

/** A 32-bit avalanche hash (murmur3 finaliser) of the row index, salted per column. */
export function hash(index: number, salt: number): number {
  let h = (index + Math.imul(salt, 0x9e3779b9)) | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A float8 with a full-length mantissa in [0, 1), from 53 hashed bits. */
export function unitDouble(index: number, salt: number): number {
  const high = hash(index, salt) >>> 11;
  const low = hash(index, salt + 1);
  return (high * 4294967296 + low) / 9007199254740992;
}
