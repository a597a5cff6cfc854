// The values parquet-columns.ts's converters give, read from a CSV cell's bytes (parquet-from-csv.ts)
// without a string: integers, dates, timestamps and booleans in their usual text. Each returns
// undefined for any other text, which then goes to the converter as a string (`cellText`): the
// same value, or the same refusal, either way.

/** Days since 1970-01-01 of a proleptic Gregorian date (years 1 to 9999 and beyond). */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/** A value read from a cell's bytes [at, at + length), or undefined where the converter must read its text. */
export type CellReader<T> = (b: Uint8Array, at: number, length: number) => T | undefined;

/** The number of the digits at [from, to), or -1 where one is not a digit. */
function digits(b: Uint8Array, from: number, to: number): number {
  let n = 0;
  for (let k = from; k < to; k++) {
    const d = b[k]! - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/** An integer of up to `most` characters (a sign among them for int8, as `bigInteger` counts them), within `max`. */
function integerCell(most: number, max: number): CellReader<number> {
  return (b, at, length) => {
    // An empty cell has no sign: b[at] is then the next cell's length.
    if (length === 0) return undefined;
    const negative = b[at] === 45;
    const from = negative ? at + 1 : at;
    if (length > most || from === at + length) return undefined;
    const n = digits(b, from, at + length);
    if (n < 0) return undefined;
    const v = negative ? -n : n;
    return v < -max || v >= max ? undefined : v;
  };
}

/** int2 and int4: up to 9 digits after a sign (`smallInteger`'s fast case). */
export const smallIntegerCell = (bits: 16 | 32): CellReader<number> =>
  integerCell(bits === 16 ? 6 : 10, 2 ** (bits - 1));

/** int8: up to 15 characters, which `bigInteger` reads as a number. */
export const bigIntegerCell = (): CellReader<number> => integerCell(15, Number.MAX_SAFE_INTEGER);

export const booleanCell: CellReader<boolean> = (b, at, length) =>
  length !== 1 ? undefined : b[at] === 0x74 ? true : b[at] === 0x66 ? false : undefined;

/** `YYYY-MM-DD`: its days, as `date` computes them. */
export const dateCell: CellReader<number> = (b, at, length) => {
  if (length !== 10 || b[at + 4] !== 45 || b[at + 7] !== 45) return undefined;
  const y = digits(b, at, at + 4);
  const m = digits(b, at + 5, at + 7);
  const d = digits(b, at + 8, at + 10);
  return y < 0 || m < 0 || d < 0 ? undefined : daysFromCivil(y, m, d);
};

/**
 * `YYYY-MM-DD[T ]HH:MM:SS` with up to 6 decimals: microseconds since 1970, as `timestamp` computes
 * them (a number while a double holds them exactly, else a bigint), the day kept from the value before.
 */
export function timestampCell(): CellReader<number | bigint> {
  let lastKey = -1;
  let keyDays = 0;
  return (b, at, length) => {
    if (length < 19 || length === 20 || length > 26) return undefined;
    if (b[at + 4] !== 45 || b[at + 7] !== 45 || b[at + 13] !== 58 || b[at + 16] !== 58) return undefined;
    const t = b[at + 10];
    if ((t !== 84 && t !== 32) || (length > 19 && b[at + 19] !== 46)) return undefined;
    const y = digits(b, at, at + 4);
    const mo = digits(b, at + 5, at + 7);
    const d = digits(b, at + 8, at + 10);
    const h = digits(b, at + 11, at + 13);
    const mi = digits(b, at + 14, at + 16);
    const s = digits(b, at + 17, at + 19);
    const fraction = length > 19 ? digits(b, at + 20, at + length) : 0;
    if (y < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || s < 0 || fraction < 0) return undefined;
    const key = y * 10_000 + mo * 100 + d;
    if (key !== lastKey) {
      lastKey = key;
      keyDays = daysFromCivil(y, mo, d);
    }
    const micros = length > 19 ? fraction * 10 ** (6 - (length - 20)) : 0;
    const ofDay = (h * 3600 + mi * 60 + s) * 1_000_000 + micros;
    const value = keyDays * 86_400_000_000 + ofDay;
    return Number.isSafeInteger(value) ? value : BigInt(keyDays) * 86_400_000_000n + BigInt(ofDay);
  };
}
