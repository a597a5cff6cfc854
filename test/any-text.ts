import fc from "fast-check";

/** Characters that mean something to the CSV readers' loops, the formula guard and sheet XML, and some that do not. */
const ALPHABET = [
  ...'aZ01. ,=-+@"\\\n\r\t\v\f_x&<>\u0001',
  ..."\u00a0\u00e9\u2028\u3000\u6771\ufeff\uff1d\ufffe",
  "\ud83d\ude00",
  // A backslash before an `n`: in CKAN's JSON `\\n`, which ends no row.
  "\\n",
  // Excel's own escape, which sheet XML escapes again.
  "_x0041_",
];

/** Text of up to 14 such characters (to fall anywhere in the words the readers copy), or null. */
export const anyText = fc.option(
  fc.array(fc.constantFrom(...ALPHABET), { maxLength: 14 }).map((chars) => chars.join("")),
  { nil: null, freq: 6 },
);

/** A value as PostgreSQL's COPY writes it in CSV: null an empty cell, quoted for a comma, quote or line break (or when empty). */
export const copyCell = (value: string | null): string =>
  value === null ? "" : value === "" || /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;

/** A text value as CKAN's lists records give it: its JSON text (JSON.stringify escapes as to_json does here). */
export const jsonText = (value: string | null): string => (value === null ? "null" : JSON.stringify(value));
