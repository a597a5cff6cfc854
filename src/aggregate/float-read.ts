import { productError } from "../format/shortest-float.ts";

// A float8 cell's bytes (`0.7290384031087160`, `-12.5`) read as the double Number() would read from
// its text, without making the text: a float sum reads one value per row, and a string per row is
// most of what an aggregate would otherwise allocate. Decimals of up to 19 significant digits and 22
// decimals are read exactly; anything else (an exponent, NaN, more digits) is left to Number().
//
// Up to 15 digits, units and a power of ten are both exact doubles and their quotient is the nearest
// double (Clinger's fast path). Up to 19, the units are split into two exact doubles and divided as a
// double-double, whose error is far below a double's half unit: its rounding is the nearest double
// unless the value lies that close to a midpoint between two doubles, and then Number() decides.

/** 10^0 .. 10^22, each exact (read from its text: 10^22 is the largest power of ten a double holds). */
const POWERS = Array.from({ length: 23 }, (_, k) => Number(`1e${k}`));

/** Far above the double-double's relative error (about 2^-104), far below a double's half unit (2^-53). */
const ERROR = 2 ** -96;

const bits = new Float64Array(1);
const words = new Uint32Array(bits.buffer);
/** Which of `words` holds a double's sign, exponent and top of its fraction. */
const HIGH = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;

/**
 * Whether `y + t` (|t| at most half of y's unit, and the error of the double-double far below it)
 * may round to another double than `y`: it lies within the error of a midpoint, or y is a power of
 * two (whose unit below is half the one above).
 */
function nearMidpoint(y: number, t: number): boolean {
  bits[0] = y;
  const high = words[HIGH]!;
  if ((high & 0xfffff) === 0 && words[1 - HIGH] === 0) return true;
  // Half of y's unit: 2^(exponent - 53), built from y's own exponent bits (y is far from subnormal).
  words[HIGH] = (high & 0x7ff00000) - (53 << 20);
  words[1 - HIGH] = 0;
  const half = bits[0]!;
  return half - Math.abs(t) <= Math.abs(y) * ERROR;
}

/** Set by readFloat: false when the cell is not a plain decimal it reads exactly (the caller uses Number()). */
export const floatRead = { ok: false };

/** The double of the decimal at b[start, end); check `floatRead.ok`. */
export function readFloat(b: Uint8Array, start: number, end: number): number {
  floatRead.ok = false;
  let i = start;
  const negative = b[i] === 45;
  if (negative) i++;
  // Significant digits: the first 15 in `high`, up to 4 more in `low`.
  let high = 0;
  let low = 0;
  let lowDigits = 0;
  let digits = 0;
  let seen = 0;
  let scale = -1;
  for (; i < end; i++) {
    const c = b[i]!;
    if (c >= 48 && c <= 57) {
      seen++;
      if (scale >= 0) scale++;
      if (digits === 0 && c === 48) continue;
      digits++;
      if (digits <= 15) high = high * 10 + (c - 48);
      else {
        low = low * 10 + (c - 48);
        lowDigits++;
      }
    } else if (c === 46 && scale < 0) scale = 0;
    else return 0;
  }
  if (seen === 0 || digits > 19) return 0;
  if (scale < 0) scale = 0;
  if (scale > 22) return 0;
  const value = lowDigits === 0 ? high / POWERS[scale]! : divided(high, low, lowDigits, POWERS[scale]!);
  if (Number.isNaN(value)) return 0;
  floatRead.ok = true;
  return negative ? -value : value;
}

/** (high * 10^lowDigits + low) / divisor, correctly rounded; NaN when too near a midpoint to tell. */
function divided(high: number, low: number, lowDigits: number, divisor: number): number {
  // The units exactly as s1 + lo: integers, so the small parts add without rounding.
  const shift = POWERS[lowDigits]!;
  const p = high * shift;
  const pe = productError(high, shift, p);
  const s1 = p + low;
  const lo = low - (s1 - p) + pe;
  // Divided as a double-double: q1 + q2, the remainder computed exactly but for its last bit.
  const q1 = s1 / divisor;
  const qp = q1 * divisor;
  const qe = productError(q1, divisor, qp);
  const q2 = (s1 - qp - qe + lo) / divisor;
  const y = q1 + q2;
  const t = q2 - (y - q1);
  return nearMidpoint(y, t) ? Number.NaN : y;
}
