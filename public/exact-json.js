// JSON read the way the export writes it: every number as CKAN's text. JSON.parse alone turns
// 12345678901234567890 into 12345678901234567000 and 1.0 into 1; the export keeps both as CKAN wrote
// them, so the preview must too. A reviver sees each number's source text (context.source) and keeps
// it as a raw JSON value when the double would print differently; JSON.stringify writes such a value
// back as that text. Browsers without source access (before Chrome 114, Firefox 135, Safari 18.4)
// get JSON.parse's doubles, and EXACT_NUMBERS says so.

export const EXACT_NUMBERS = typeof JSON.rawJSON === "function" && typeof JSON.isRawJSON === "function";

function keepSource(_key, value, context) {
  return typeof value === "number" && context?.source !== undefined && String(value) !== context.source
    ? JSON.rawJSON(context.source)
    : value;
}

/** JSON.parse, with numbers a double cannot print as written kept as their text. */
export function parseExact(text) {
  return JSON.parse(text, EXACT_NUMBERS ? keepSource : undefined);
}

/** What a cell shows: "" for null, CKAN's text for a number, compact JSON for a list or an object. */
export function cellText(value) {
  if (value === null || value === undefined) return "";
  if (EXACT_NUMBERS && JSON.isRawJSON(value)) return value.rawJSON;
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/** A count for people: 20,002; a count too large for a double keeps its text. */
export function countText(value) {
  return typeof value === "number" ? value.toLocaleString("en") : cellText(value);
}
