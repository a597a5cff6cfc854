// How numbers are written by the two programs behind CKAN: PostgreSQL (float8out/float4out print
// the shortest text that reads back exactly, switching to an exponent outside 1e-4..1e15 for float8
// and 1e-4..1e6 for float4; numeric keeps its stored text) and Python (repr of a float, used by
// CKAN's json.dumps for the values it echoes). Also an exact comparison of numeric texts.

/** Shortest round-trip decimal digits of a finite double and the exponent of the first digit. */
function shortest(value: number): { negative: boolean; digits: string; exponent: number } {
  // toExponential() with no argument gives as many digits as it takes to read back the same double.
  const text = Math.abs(value).toExponential();
  const e = text.indexOf("e");
  return {
    negative: value < 0 || Object.is(value, -0),
    digits: text.slice(0, e).replace(".", ""),
    exponent: Number(text.slice(e + 1)),
  };
}

function fixed(digits: string, exponent: number): string {
  if (exponent < 0) return `0.${"0".repeat(-exponent - 1)}${digits}`;
  if (digits.length <= exponent + 1) return digits + "0".repeat(exponent + 1 - digits.length);
  return `${digits.slice(0, exponent + 1)}.${digits.slice(exponent + 1)}`;
}

function scientific(digits: string, exponent: number): string {
  const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  const sign = exponent < 0 ? "-" : "+";
  return `${mantissa}e${sign}${String(Math.abs(exponent)).padStart(2, "0")}`;
}

function pgFloat(value: number, fixedBelow: number, digits?: string, exponent?: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "Infinity";
  if (value === -Infinity) return "-Infinity";
  if (value === 0) return Object.is(value, -0) ? "-0" : "0";
  const parts = shortest(value);
  const d = digits ?? parts.digits;
  const e = exponent ?? parts.exponent;
  const body = e >= -4 && e < fixedBelow ? fixed(d, e) : scientific(d, e);
  return parts.negative ? `-${body}` : body;
}

/** PostgreSQL's text of a float8 (`1.738914190048968e+16`, `24044285744692.574`, `0.1`). */
export function float8Text(value: number): string {
  // Between 1e-4 and 1e15 both write the shortest digits in fixed notation.
  const abs = Math.abs(value);
  if (abs >= 1e-4 && abs < 1e15) return String(value);
  return pgFloat(value, 15);
}

/** PostgreSQL's text of a float4 (`real`), such as the rank ts_rank returns: `0.08170687`. */
export function float4Text(value: number): string {
  const single = Math.fround(value);
  if (!Number.isFinite(single) || single === 0) return pgFloat(single, 6);
  // The shortest digits that read back as the same float4 (not the same double).
  for (let precision = 1; precision <= 9; precision++) {
    const candidate = Number(Math.abs(single).toPrecision(precision));
    if (Math.fround(candidate) === Math.abs(single)) {
      const parts = shortest(candidate);
      return pgFloat(single, 6, parts.digits, parts.exponent);
    }
  }
  return pgFloat(single, 6);
}

/** Python's repr() of a float: `1.0`, `0.1`, `1e-07`, `1.5e+16`. */
export function pythonFloatRepr(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "Infinity" : "-Infinity";
  if (value === 0) return Object.is(value, -0) ? "-0.0" : "0.0";
  const { negative, digits, exponent } = shortest(value);
  let body: string;
  if (exponent >= -4 && exponent < 16) {
    body = fixed(digits, exponent);
    if (!body.includes(".")) body += ".0";
  } else {
    body = scientific(digits, exponent);
  }
  return negative ? `-${body}` : body;
}

// --- numeric: exact decimal texts --------------------------------------------------------------

const DECIMAL = /^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/;

interface Decimal {
  readonly sign: -1 | 0 | 1;
  /** Significant digits without leading or trailing zeros ("" for zero). */
  readonly digits: string;
  /** Power of ten of the first significant digit. */
  readonly exponent: number;
}

/** True when PostgreSQL's numeric input accepts the text (NaN and Infinity aside). */
export function isDecimalText(text: string): boolean {
  const match = DECIMAL.exec(text);
  return match !== null && ((match[2] ?? "") !== "" || (match[3] ?? "") !== "");
}

function parseDecimal(text: string): Decimal {
  const match = DECIMAL.exec(text);
  if (!match) throw new RangeError(`not a decimal: ${text}`);
  const whole = match[2] ?? "";
  const fraction = match[3] ?? "";
  const all = whole + fraction;
  const lead = all.search(/[1-9]/);
  if (lead < 0) return { sign: 0, digits: "", exponent: 0 };
  const digits = all.slice(lead).replace(/0+$/, "");
  const exponent = whole.length - lead - 1 + Number(match[4] ?? 0);
  return { sign: match[1] === "-" ? -1 : 1, digits, exponent };
}

/** Orders two decimal texts by value, exactly, whatever their digits or exponents. */
export function compareDecimalText(a: string, b: string): number {
  const x = parseDecimal(a);
  const y = parseDecimal(b);
  if (x.sign !== y.sign) return x.sign - y.sign;
  if (x.sign === 0) return 0;
  let magnitude = x.exponent - y.exponent;
  if (magnitude === 0) magnitude = x.digits < y.digits ? -1 : x.digits > y.digits ? 1 : 0;
  return x.sign * Math.sign(magnitude);
}

/** The decimal text of a double exactly as Python would hand it to PostgreSQL. */
export function numberAsDecimalText(value: number): string {
  return Number.isInteger(value) && Math.abs(value) < 1e21 ? BigInt(value).toString() : pythonFloatRepr(value);
}
