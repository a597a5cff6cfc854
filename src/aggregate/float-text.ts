// PostgreSQL's text of a float8 (float8out with its default extra_float_digits): the shortest digits
// that read back as the same double, in fixed notation from 1e-4 up to 1e15 and with an exponent
// outside it (`1.738914190048968e+16`), as CKAN writes float8 values. JavaScript's own String()
// switches to an exponent only at 1e21.

function scientific(value: number): string {
  // toExponential() without an argument gives as many digits as it takes to read back the same double.
  const text = Math.abs(value).toExponential();
  const at = text.indexOf("e");
  const exponent = Number(text.slice(at + 1));
  const body = `${text.slice(0, at)}e${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
  return value < 0 ? `-${body}` : body;
}

export function float8Text(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "Infinity";
  if (value === Number.NEGATIVE_INFINITY) return "-Infinity";
  if (value === 0) return Object.is(value, -0) ? "-0" : "0";
  const abs = Math.abs(value);
  return abs >= 1e-4 && abs < 1e15 ? String(value) : scientific(value);
}
