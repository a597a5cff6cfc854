// What a value is, from its text or bytes and its column's type: shared by readers of CKAN's answers
// and encoders, which must agree on it to write a value the same way on every page.

/** `-12.5`, `+3`, `1e5` are numbers, not formulas: a spreadsheet must still read them as numbers. */
export const PLAIN_NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;

/** PLAIN_NUMBER on bytes, all of [start, end): for the readers of CKAN's answer bytes, which decode no text. */
export function isPlainNumber(csv: Uint8Array, start: number, end: number): boolean {
  let i = start;
  if (csv[i] === 0x2b || csv[i] === 0x2d) i++;
  const whole = i;
  while (i < end && isDigit(csv[i])) i++;
  let digits = i - whole;
  if (i < end && csv[i] === 0x2e) {
    const fraction = ++i;
    while (i < end && isDigit(csv[i])) i++;
    digits += i - fraction;
  }
  if (digits === 0) return false;
  if (i < end && (csv[i] === 0x65 || csv[i] === 0x45)) {
    i++;
    if (i < end && (csv[i] === 0x2b || csv[i] === 0x2d)) i++;
    const exponent = i;
    while (i < end && isDigit(csv[i])) i++;
    if (i === exponent) return false;
  }
  return i === end;
}

/** Significant digits of a plain number's text (leading and trailing zeros not counted). */
export function significantDigits(text: string): number {
  const [whole = "", fraction = ""] = text
    .replace(/^[+-]/, "")
    .replace(/[eE].*$/, "")
    .split(".");
  return Math.max(1, (whole + fraction).replace(/^0+/, "").replace(/0+$/, "").length);
}

const NUMERIC_TYPES =
  /^(int|int2|int4|int8|integer|bigint|smallint|numeric|decimal|float|float4|float8|real|double precision|money|serial|bigserial)$/i;

/** Columns whose values are numbers are never altered, even when a value arrives as text. */
export const isNumericType = (type: string): boolean => NUMERIC_TYPES.test(type);

/** Whether a column's values are JSON text (arrays and json), written in CSV as CKAN writes them. */
export const isJsonType = (type: string): boolean => type.startsWith("_") || type === "json" || type === "jsonb";
