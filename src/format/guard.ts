import { PLAIN_NUMBER } from "../rows/values.ts";

/**
 * Formula-injection guard (OWASP "CSV injection"): spreadsheets run a cell that starts with one of
 * these as a formula. The full-width and small forms count because some spreadsheet locales and
 * import paths normalise them to their ASCII originals.
 */
const TRIGGERS = new Set([
  "=",
  "+",
  "-",
  "@",
  "\t",
  "\r",
  "\n",
  "\uff1d",
  "\uff0b",
  "\uff0d",
  "\uff20",
  "\ufe66",
  "\ufe62",
  "\ufe63",
  "\ufe6b",
]);

/**
 * What may stand before a trigger and still leave it first once an import trims or ignores it:
 * spaces of every width (NBSP, U+3000, ...), zero-width and direction marks, word joiners, a BOM.
 */
const LEADING = /^[\s\u00a0\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f-\u2064\u2066-\u206f\u3000\ufeff]+/;

/**
 * The cell with an apostrophe before it when a spreadsheet could run it as a formula: judged by the
 * value (whatever its column's type), past any leading space or invisible character. A plain number
 * (`-12.5`) is left alone.
 */
export function guardFormula(text: string): string {
  const first = text[0];
  if (first === undefined) return text;
  if (TRIGGERS.has(first)) return PLAIN_NUMBER.test(text) ? text : `'${text}`;
  const rest = text.replace(LEADING, "");
  if (rest === text || rest === "" || !TRIGGERS.has(rest[0]!) || PLAIN_NUMBER.test(rest)) return text;
  return `'${text}`;
}
