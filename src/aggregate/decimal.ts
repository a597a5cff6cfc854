// PostgreSQL's numeric, as far as aggregates need it: exact sums (BigInt units at the largest scale
// met, so trailing zeros stay: `1104955.70`) and numeric division with PostgreSQL's own choice of
// result scale (select_div_scale in numeric.c) and rounding (half away from zero). Never a double.

/** A finite decimal: `units` / 10^`scale`. */
export interface Decimal {
  units: bigint;
  scale: number;
}

const DECIMAL_TEXT = /^([+-]?)(\d*)(?:\.(\d*))?$/;

/** A numeric's text as CKAN wrote it (`-0.50`, `12345678901234567890.123456789`), or undefined if it is not one. */
export function parseDecimal(text: string): Decimal | undefined {
  const match = DECIMAL_TEXT.exec(text);
  if (match === null) return undefined;
  const whole = match[2] ?? "";
  const fraction = match[3] ?? "";
  if (whole === "" && fraction === "") return undefined;
  const units = BigInt(whole + fraction || "0");
  return { units: match[1] === "-" ? -units : units, scale: fraction.length };
}

const TEN = 10n;
const pow10 = (n: number): bigint => TEN ** BigInt(n);

/** `value` written at `scale` (>= its own). */
const rescaled = (value: Decimal, scale: number): bigint => value.units * pow10(scale - value.scale);

export function addDecimal(a: Decimal, b: Decimal): Decimal {
  const scale = Math.max(a.scale, b.scale);
  return { units: rescaled(a, scale) + rescaled(b, scale), scale };
}

export function compareDecimal(a: Decimal, b: Decimal): number {
  const scale = Math.max(a.scale, b.scale);
  const x = rescaled(a, scale);
  const y = rescaled(b, scale);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** PostgreSQL's text of a numeric: every digit of its scale, `-0.50`, `0`, `-12.5`. */
export function decimalText(value: Decimal): string {
  const negative = value.units < 0n;
  const digits = (negative ? -value.units : value.units).toString().padStart(value.scale + 1, "0");
  const body = value.scale === 0 ? digits : `${digits.slice(0, -value.scale)}.${digits.slice(-value.scale)}`;
  return negative ? `-${body}` : body;
}

/** NBASE-10000 weight and first digit of a decimal, as numeric.c normalises it (zero: 0 and 0). */
function weightAndFirstDigit(value: Decimal): { weight: number; first: number } {
  const units = value.units < 0n ? -value.units : value.units;
  if (units === 0n) return { weight: 0, first: 0 };
  const digits = units.toString();
  const whole = digits.length - value.scale;
  if (whole > 0) {
    const lead = ((whole - 1) % 4) + 1;
    return { weight: Math.floor((whole - 1) / 4), first: Number(digits.slice(0, lead)) };
  }
  // Below 1: the fraction in groups of four digits after the point; the first group that is not zero.
  const fraction = digits.padStart(value.scale, "0");
  const padded = fraction.padEnd(Math.ceil(fraction.length / 4) * 4, "0");
  for (let group = 0; group * 4 < padded.length; group++) {
    const first = Number(padded.slice(group * 4, group * 4 + 4));
    if (first !== 0) return { weight: -(group + 1), first };
  }
  return { weight: 0, first: 0 };
}

/** numeric.c: at least 16 significant digits, and no fewer decimals than either input shows. */
const NUMERIC_MIN_SIG_DIGITS = 16;
const NUMERIC_MAX_DISPLAY_SCALE = 1000;

function divisionScale(dividend: Decimal, divisor: Decimal): number {
  const a = weightAndFirstDigit(dividend);
  const b = weightAndFirstDigit(divisor);
  let quotientWeight = a.weight - b.weight;
  if (a.first <= b.first) quotientWeight--;
  const scale = Math.max(NUMERIC_MIN_SIG_DIGITS - quotientWeight * 4, dividend.scale, divisor.scale, 0);
  return Math.min(scale, NUMERIC_MAX_DISPLAY_SCALE);
}

/** `dividend / divisor` as PostgreSQL's numeric_div gives it (divisor not zero). */
export function divideDecimal(dividend: Decimal, divisor: Decimal): Decimal {
  const scale = divisionScale(dividend, divisor);
  // units / 10^scale = (a / 10^sa) / (b / 10^sb)  =>  units = a * 10^(scale - sa + sb) / b
  let numerator = dividend.units * pow10(scale - dividend.scale + divisor.scale);
  let denominator = divisor.units;
  if (denominator < 0n) {
    numerator = -numerator;
    denominator = -denominator;
  }
  const negative = numerator < 0n;
  const magnitude = negative ? -numerator : numerator;
  let quotient = magnitude / denominator;
  if ((magnitude % denominator) * 2n >= denominator) quotient += 1n;
  return { units: negative ? -quotient : quotient, scale };
}

/** A whole number as a decimal (a count as numeric_avg divides by it). */
export const wholeDecimal = (n: bigint | number): Decimal => ({ units: BigInt(n), scale: 0 });
