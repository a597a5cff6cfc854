// CKAN's answers read without losing a digit: every record value is kept as the exact JSON text CKAN
// wrote (`12345678901234567890.123456789`, `-0.50`, a json column's own spacing), while the small
// rest of the answer (fields, total, next_page) goes through JSON.parse. JSON.parse alone would round
// every number through a double.

import { BACKSLASH, CLOSE_LIST, CLOSE_OBJECT, COLON, COMMA, isSpaceByte, OPEN_LIST, OPEN_OBJECT, QUOTE } from "../rows/json-bytes.ts";

/** The source text of one JSON value, exactly as CKAN wrote it (`undefined`: the value is absent). */
export type RawValue = string;

/** A record as scanned: a list of raw values (`lists`), or raw values by column id (`objects`). */
export type RawRecord = RawValue[] | Record<string, RawValue>;

class Malformed extends Error {}

/** Records that are one CSV string hold no number to lose: JSON.parse reads such an answer faster. */
class TextRecords extends Error {}


function skipSpace(text: string, at: number): number {
  while (isSpaceByte(text.charCodeAt(at))) at++;
  return at;
}

/** `at` is an opening quote; returns the index after its closing quote. */
function skipString(text: string, at: number): number {
  let close = at;
  for (;;) {
    close = text.indexOf('"', close + 1);
    if (close < 0) throw new Malformed("unterminated string");
    let backslashes = 0;
    while (text.charCodeAt(close - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return close + 1;
  }
}

/** Returns the index after the value starting at `at` (a string, list, object, number or literal). */
function skipValue(text: string, at: number): number {
  const c = text.charCodeAt(at);
  if (c === QUOTE) return skipString(text, at);
  if (c === OPEN_LIST || c === OPEN_OBJECT) {
    let depth = 0;
    for (let i = at; ; ) {
      const d = text.charCodeAt(i);
      if (d === QUOTE) {
        i = skipString(text, i);
        continue;
      }
      if (d === OPEN_LIST || d === OPEN_OBJECT) depth++;
      else if (d === CLOSE_LIST || d === CLOSE_OBJECT) {
        if (--depth === 0) return i + 1;
      } else if (Number.isNaN(d)) throw new Malformed("unterminated list or object");
      i++;
    }
  }
  let i = at;
  for (;;) {
    const d = text.charCodeAt(i);
    if (d === COMMA || d === CLOSE_LIST || d === CLOSE_OBJECT || isSpaceByte(d) || Number.isNaN(d)) break;
    i++;
  }
  if (i === at) throw new Malformed(`unexpected character at ${at}`);
  return i;
}

/** A key's text: most keys hold no escapes and need no parse. */
const keyText = (token: string): string => (token.includes("\\") ? (JSON.parse(token) as string) : token.slice(1, -1));

/**
 * Walks the members of the object at `at`, calling `member(key, valueStart)`, which returns where
 * the value ends. Returns the index after the object.
 */
function walkObject(text: string, at: number, member: (key: string, valueAt: number) => number): number {
  if (text.charCodeAt(at) !== OPEN_OBJECT) throw new Malformed("expected an object");
  let i = skipSpace(text, at + 1);
  if (text.charCodeAt(i) === CLOSE_OBJECT) return i + 1;
  for (;;) {
    if (text.charCodeAt(i) !== QUOTE) throw new Malformed("expected a key");
    const keyEnd = skipString(text, i);
    const key = keyText(text.slice(i, keyEnd));
    i = skipSpace(text, keyEnd);
    if (text.charCodeAt(i) !== COLON) throw new Malformed("expected a colon");
    i = skipSpace(text, member(key, skipSpace(text, i + 1)));
    const sep = text.charCodeAt(i);
    if (sep === CLOSE_OBJECT) return i + 1;
    if (sep !== COMMA) throw new Malformed("expected a comma");
    i = skipSpace(text, i + 1);
  }
}

/** Where the list of raw values at `at` ends; `into` receives the values. */
function scanList(text: string, at: number, into: RawValue[]): number {
  let i = skipSpace(text, at + 1);
  if (text.charCodeAt(i) === CLOSE_LIST) return i + 1;
  for (;;) {
    const end = skipValue(text, i);
    into.push(text.slice(i, end));
    i = skipSpace(text, end);
    const sep = text.charCodeAt(i);
    if (sep === CLOSE_LIST) return i + 1;
    if (sep !== COMMA) throw new Malformed("expected a comma in a record");
    i = skipSpace(text, i + 1);
  }
}

/** The records list at `at` as raw records; returns where it ends. */
function scanRecords(text: string, at: number, records: RawRecord[]): number {
  let i = skipSpace(text, at + 1);
  if (text.charCodeAt(i) === CLOSE_LIST) return i + 1;
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === OPEN_LIST) {
      const row: RawValue[] = [];
      i = scanList(text, i, row);
      records.push(row);
    } else if (c === OPEN_OBJECT) {
      // No prototype: a column may be called "constructor" or "__proto__".
      const record = Object.create(null) as Record<string, RawValue>;
      i = walkObject(text, i, (key, valueAt) => {
        const end = skipValue(text, valueAt);
        record[key] = text.slice(valueAt, end);
        return end;
      });
      records.push(record);
    } else {
      throw new Malformed("a record is neither a list nor an object");
    }
    i = skipSpace(text, i);
    const sep = text.charCodeAt(i);
    if (sep === CLOSE_LIST) return i + 1;
    if (sep !== COMMA) throw new Malformed("expected a comma between records");
    i = skipSpace(text, i + 1);
  }
}

/**
 * Parses a CKAN answer: `result.records` as raw records (or the CSV text of `records_format: "csv"`),
 * everything else with JSON.parse. Throws a SyntaxError for text that is not JSON.
 */
export function parseAnswer(text: string): unknown {
  let span: { start: number; end: number; records: RawRecord[] } | undefined;
  try {
    walkObject(text, skipSpace(text, 0), (key, at) => {
      if (key !== "result" || text.charCodeAt(at) !== OPEN_OBJECT || span !== undefined) return skipValue(text, at);
      return walkObject(text, at, (inner, valueAt) => {
        const c = text.charCodeAt(valueAt);
        if (inner !== "records" || (c !== OPEN_LIST && c !== QUOTE)) return skipValue(text, valueAt);
        if (c === QUOTE) throw new TextRecords();
        const records: RawRecord[] = [];
        const end = scanRecords(text, valueAt, records);
        span = { start: valueAt, end, records };
        return end;
      });
    });
  } catch (error) {
    if (error instanceof TextRecords) return JSON.parse(text);
    if (!(error instanceof Malformed)) throw error;
    // Not an object of the expected shape: JSON.parse says whether it is JSON at all (an error answer
    // may be a bare string), and such an answer has no records to keep exact.
    span = undefined;
  }
  if (span === undefined) return JSON.parse(text);
  const envelope = JSON.parse(`${text.slice(0, span.start)}null${text.slice(span.end)}`) as { result: { records: unknown } };
  envelope.result.records = span.records;
  return envelope;
}
