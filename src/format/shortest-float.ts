/**
 * Whether a decimal of 16 or 17 significant digits is the text JavaScript's `String` gives for the
 * double nearest it (so a spreadsheet's number cell holds exactly what the text says), decided with
 * a few exact double operations instead of parsing and printing (`String(Number(text))` cost about a
 * microsecond for such values, most of an XLSX float cell's time). The decimal is `digits` (an
 * integer, given as `high * 1e8 + low`) times 10^-places. True and false are certain; undefined
 * (a case too close to call, or outside what this handles) leaves it to `String`.
 *
 * Let d be the double nearest the decimal T, u its ulp, and measure in units of T's last digit. T is
 * `String(d)` when (1) T is the closest decimal of its length to d (|T - d| < 1/2), and (2) no decimal
 * one digit shorter (a multiple of 10 units) lies within d's rounding interval (|c - d| < u/2): then
 * no shorter text reads back as d, and of those of T's length T is the closest, as ECMA-262's
 * Number::toString picks. T - d is computed exactly (but for one last rounding) from Dekker's exact
 * product of d and 10^places.
 */

const SPLIT = 134_217_729; // 2^27 + 1
/** Away from a boundary by less than this (in units of the last digit), a case is left undecided. */
const MARGIN = 1e-6;

/** The rounding error of `p = a * b`: a * b - p exactly (Dekker, for values far from overflow). */
export function productError(a: number, b: number, p: number): number {
  let t = SPLIT * a;
  const ah = t - (t - a);
  const al = a - ah;
  t = SPLIT * b;
  const bh = t - (t - b);
  const bl = b - bh;
  return ah * bh - p + ah * bl + al * bh + al * bl;
}

const bits = new Float64Array(1);
const words = new Uint32Array(bits.buffer);

/** The ulp of a positive normal double, or 0 for a power of two (an uneven interval) or a value not normal. */
function ulpOf(d: number): number {
  bits[0] = d;
  const high = words[1]!;
  const exponent = (high >>> 20) & 0x7ff;
  if (exponent === 0 || exponent === 0x7ff || ((high & 0xfffff) === 0 && words[0] === 0)) return 0;
  return 2 ** (exponent - 1075);
}

/** T - d in units of T's last digit, T = (high * 1e8 + low) units and d * scale units. */
function residual(high: number, low: number, d: number, scale: number): number {
  const p = d * scale;
  const e = productError(d, scale, p);
  const a = high * 1e8;
  const b = productError(high, 1e8, a);
  // Integers below 2^53 whose sum is exact; only subtracting `e` rounds.
  return a - p + b + low - e;
}

export function isShortestDecimal(high: number, low: number, places: number): boolean | undefined {
  if (places < 1 || places > 22) return undefined;
  const scale = 10 ** places;
  let d = (high * 1e8 + low) / scale;
  let u = ulpOf(d);
  if (u === 0) return undefined;
  let r = residual(high, low, d, scale);
  let half = (u * scale) / 2;
  // The quotient may be a double off the nearest: step once toward T.
  if (Math.abs(r) >= half) {
    d += r > 0 ? u : -u;
    if (ulpOf(d) !== u) return undefined;
    r = residual(high, low, d, scale);
    u = ulpOf(d);
    half = (u * scale) / 2;
  }
  if (Math.abs(r) > half - MARGIN) return undefined;
  const closest = Math.abs(r);
  if (closest > 0.5 - MARGIN) return closest > 0.5 + MARGIN ? false : undefined;
  const last = low % 10;
  for (let j = -2; j <= 3; j++) {
    const distance = Math.abs(10 * j - last + r);
    if (distance < half + MARGIN) return distance < half - MARGIN ? false : undefined;
  }
  return true;
}
