import { hash, unitDouble } from "./hash.ts";
import { defineTable, type Column, type Table, type Value } from "./schema.ts";

// The table behind `sample`, `private` and `big`: the columns of the real CKAN 2.10 fixtures,
// rows generated from the row index. Text holds the values an export must survive (quotes, commas,
// CR/LF, tabs, emoji, formula-like starts); `amount` is numeric text with trailing zeros and, now
// and then, more decimals than a double keeps (a grant's amount still: the 29-digit values are the
// edge table's, where no one reads them as money).

export const SAMPLE_COLUMNS: readonly Column[] = [
  { id: "_id", type: "int" },
  { id: "id", type: "int4" },
  { id: "amount", type: "numeric" },
  { id: "ratio", type: "float8" },
  { id: "category", type: "text" },
  { id: "name", type: "text" },
  { id: "note", type: "text" },
  { id: "formula", type: "text" },
  { id: "created", type: "timestamp" },
  { id: "active", type: "bool" },
];

const VOCABULARY = ["glacier", "river", "meadow", "canyon", "desert", "valley", "mountain", "forest"];
const CATEGORIES = ["alpha", "beta", "gamma", "delta", "epsilon"];
// 2020-01-01T00:00:00Z in seconds; rows are spaced 150 s apart on average.
const EPOCH_SECONDS = 1_577_836_800;
const STEP_SECONDS = 150;

function word(h: number, shift: number): string {
  return VOCABULARY[(h >>> shift) & 7] ?? "river";
}

/** Cents as numeric text with its two decimals: "-0.50", "1274.30". */
export function centsText(cents: number): string {
  const sign = cents < 0 ? "-" : "";
  const abs = Math.abs(cents);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`;
}

/** 20 integer digits and 9 decimals: 29 significant digits, where a double keeps about 17. */
export function longDecimal(index: number, salt: number): string {
  const whole = (BigInt(hash(index, salt)) << 32n) | BigInt(hash(index, salt + 1));
  const digits = (10n ** 19n + (whole % (9n * 10n ** 19n))).toString();
  const fraction = String(hash(index, salt + 2) % 1_000_000_000).padStart(9, "0");
  return `${hash(index, salt + 3) & 1 ? "-" : ""}${digits}.${fraction}`;
}

/**
 * An amount in the same range as the others, carried 12 decimals past the cent: up to 19 significant
 * digits, more than a double (about 17) or a spreadsheet (15) keeps.
 */
export function preciseAmount(index: number, salt: number): string {
  const cents = centsText((hash(index, 2) % 1_600_000) - 600_000);
  const more =
    String(hash(index, salt) % 1_000_000).padStart(6, "0") + String(hash(index, salt + 1) % 1_000_000).padStart(6, "0");
  return `${cents}${more}`;
}

function amount(index: number): string | null {
  const id = index + 1;
  if (id % 17 === 0) return null;
  if (id % 97 === 0) return preciseAmount(index, 20);
  return centsText((hash(index, 2) % 1_600_000) - 600_000);
}

function name(index: number): string | null {
  const h = hash(index, 5);
  if ((h >>> 20) % 41 === 0) return null;
  const a = word(h, 0);
  const b = word(h, 3);
  switch ((h >>> 6) % 10) {
    case 0:
      return `He said "${a}" to ${b}`;
    case 1:
      return `${a}\n${b}`;
    case 2:
      return `Ñandú ${a}`;
    case 3:
      return `${a}'s "${b}",\r\nmixed`;
    case 4:
      return `${a}, ${b}`;
    case 5:
      return `Zürich ${a}`;
    case 6:
      return `${a} ${b} ${index + 1}`;
    case 7:
      return `${a} 🌲 ${b}`;
    case 8:
      return `${a}\t${b}`;
    default:
      return "";
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
    case 0:
      return `-${n}`;
    case 1:
      return `${n}`;
    case 2:
      return `-${a}`;
    case 3:
      return `+${a}`;
    case 4:
      return `@${a}`;
    case 5:
      return `=SUM(A${id}:B${id})`;
    case 6:
      return `=HYPERLINK("http://example.invalid/${id}","x")`;
    case 7:
      return `${a}-${b}`;
    case 8:
      return a;
    default:
      return `${a} ${b}`;
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
  (index) => unitDouble(index, 3),
  (index) => CATEGORIES[hash(index, 1) % CATEGORIES.length] ?? "alpha",
  name,
  note,
  formula,
  created,
  active,
];

/** The value of column `column` (a SAMPLE_COLUMNS position) in row `index` (0-based). */
export function cellAt(column: number, index: number): Value {
  const generate = GENERATORS[column];
  if (!generate) throw new RangeError(`no column ${column}`);
  return generate(index);
}

/** A whole row in SAMPLE_COLUMNS order. */
export function rowAt(index: number): Value[] {
  return GENERATORS.map((generate) => generate(index));
}

export function sampleTable(rows: number): Table {
  return defineTable(SAMPLE_COLUMNS, rows, cellAt);
}
