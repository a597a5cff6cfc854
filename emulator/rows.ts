import type { Value } from "./schema.ts";

// Every cell is a pure function of (column, row index), so a million-row table costs no memory
// and any page can be produced without touching the rows before it. Row index 0 has `_id` 1.

const VOCABULARY = ["glacier", "river", "meadow", "canyon", "desert", "valley", "mountain", "forest"];
const CATEGORIES = ["alpha", "beta", "gamma", "delta", "epsilon"];
// 2020-01-01T00:00:00Z in seconds; rows are spaced 150 s apart on average.
const EPOCH_SECONDS = 1_577_836_800;
const STEP_SECONDS = 150;

/** A 32-bit avalanche hash (murmur3 finaliser) of the row index, salted per column. */
function hash(index: number, salt: number): number {
  let h = (index + Math.imul(salt, 0x9e3779b9)) | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function word(h: number, shift: number): string {
  return VOCABULARY[(h >>> shift) & 7] ?? "river";
}

function amount(index: number): number | null {
  const id = index + 1;
  if (id % 17 === 0) return null;
  const cents = (hash(index, 2) % 1_600_000) - 600_000;
  return cents / 100;
}

function ratio(index: number): number {
  // 53 random bits: a float8 with a full-length mantissa, like the fixtures' values.
  const high = hash(index, 3) >>> 11;
  const low = hash(index, 4);
  return (high * 4294967296 + low) / 9007199254740992;
}

function name(index: number): string | null {
  const h = hash(index, 5);
  if ((h >>> 20) % 41 === 0) return null;
  const a = word(h, 0);
  const b = word(h, 3);
  switch ((h >>> 6) % 10) {
    case 0: return `He said "${a}" to ${b}`;
    case 1: return `${a}\n${b}`;
    case 2: return `Ñandú ${a}`;
    case 3: return `${a}'s "${b}",\r\nmixed`;
    case 4: return `${a}, ${b}`;
    case 5: return `Zürich ${a}`;
    case 6: return `${a} ${b} ${index + 1}`;
    case 7: return `${a} 🌲 ${b}`;
    case 8: return `${a}\t${b}`;
    default: return "";
  }
}

function note(index: number): string | null {
  const id = index + 1;
  if (id % 23 === 0) return null;
  return `note ${id} ${word(hash(index, 6), 0)}`;
}

function formula(index: number): string {
  const h = hash(index, 7);
  const id = index + 1;
  const a = word(h, 0);
  const b = word(h, 3);
  const n = (h >>> 10) % 1000;
  switch ((h >>> 20) % 10) {
    case 0: return `-${n}`;
    case 1: return `${n}`;
    case 2: return `-${a}`;
    case 3: return `+${a}`;
    case 4: return `@${a}`;
    case 5: return `=SUM(A${id}:B${id})`;
    case 6: return `=HYPERLINK("http://example.invalid/${id}","x")`;
    case 7: return `${a}-${b}`;
    case 8: return a;
    default: return `${a} ${b}`;
  }
}

function created(index: number): string | null {
  const h = hash(index, 8);
  if ((h >>> 16) % 53 === 0) return null;
  // Jitter stays below the step, so timestamps strictly increase with the row index.
  const seconds = EPOCH_SECONDS + index * STEP_SECONDS + 1 + (h % (STEP_SECONDS - 1));
  return new Date(seconds * 1000).toISOString().slice(0, 19);
}

function active(index: number): boolean | null {
  if ((index + 1) % 29 === 0) return null;
  return (hash(index, 9) & 1) === 1;
}

const GENERATORS: readonly ((index: number) => Value)[] = [
  (index) => index + 1,
  (index) => index + 1,
  amount,
  ratio,
  (index) => CATEGORIES[hash(index, 1) % CATEGORIES.length] ?? "alpha",
  name,
  note,
  formula,
  created,
  active,
];

/** The value of column `column` (a COLUMNS position) in row `index` (0-based). */
export function cellAt(column: number, index: number): Value {
  const generate = GENERATORS[column];
  if (!generate) throw new RangeError(`no column ${column}`);
  return generate(index);
}

/** A whole row in COLUMNS order. */
export function rowAt(index: number): Value[] {
  return GENERATORS.map((generate) => generate(index));
}
