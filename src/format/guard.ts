import { PLAIN_NUMBER } from "../rows/values.ts";

/**
 * Formula-injection guard (OWASP "CSV injection"): spreadsheets run a cell that starts with one of
 * these as a formula. The full-width forms count because some spreadsheet locales normalise them.
 */
const TRIGGERS = new Set(["=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20"]);

export function guardFormula(text: string): string {
  const first = text[0];
  if (first === undefined || !TRIGGERS.has(first) || PLAIN_NUMBER.test(text)) return text;
  return `'${text}`;
}
