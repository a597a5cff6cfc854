import { isJsonType, isNumericType, PLAIN_NUMBER, significantDigits } from "../rows/values.ts";
import type { ByteWriter } from "./byte-writer.ts";
import { STYLE } from "./xlsx-parts.ts";

/** How a column's values become cells; a value that does not fit its column's kind is text. */
/** "float": a double in PostgreSQL too (float4/float8); "number": an integer or numeric, exact decimal text. */
export type CellKind = "number" | "float" | "bool" | "date" | "timestamp" | "json" | "text";

export function cellKind(type: string): CellKind {
  if (/^(float|float4|float8|real|double precision)$/i.test(type)) return "float";
  if (isNumericType(type)) return "number";
  if (type === "bool" || type === "boolean") return "bool";
  if (type === "date") return "date";
  if (/^timestamp(?!tz)/.test(type)) return "timestamp";
  if (isJsonType(type)) return "json";
  return "text";
}

/** Excel's limit on a cell's text: a longer text makes Excel repair (and empty) the file. */
export const MAX_CELL_TEXT = 32767;

/** A number text as digits and a power of ten, without zeros that carry no value ("-0.50" -> -5e-1). */
function canonical(text: string): string {
  const match = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (match === null) return "";
  const [, sign = "", whole = "", fraction = "", exponent = "0"] = match;
  let digits = (whole + fraction).replace(/^0+/, "");
  let power = Number(exponent) - fraction.length;
  const trimmed = digits.replace(/0+$/, "");
  power += digits.length - trimmed.length;
  digits = trimmed;
  return digits === "" ? "0" : `${sign === "-" ? "-" : ""}${digits}e${power}`;
}

/**
 * The text of the double that is exactly this number, or undefined when a double cannot hold it
 * (more significant digits than a double keeps, or past its range): such a number is written as text.
 */
export function exactDouble(text: string, maxDigits = 17): string | undefined {
  // Most values are already the shortest text of their finite double (so plain, with at most 17
  // significant digits), and no longer than the digits allowed: no pattern, no digit counting.
  const n = Number(text);
  if (Number.isFinite(n) && String(n) === text && (maxDigits >= 17 || text.length <= maxDigits)) return text;
  if (!PLAIN_NUMBER.test(text)) return undefined;
  // A spreadsheet keeps 15 significant digits: an integer or numeric with more, even one a double
  // holds (9007199254740992), would be shown rounded; a float column's value is a double anyway.
  if (significantDigits(text) > maxDigits) return undefined;
  const value = Number(text);
  if (!Number.isFinite(value)) return undefined;
  const shortest = String(value);
  return canonical(shortest) === canonical(text) ? shortest : undefined;
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?$/;
/** Excel's day 0 is 1899-12-30 (for dates from 1900-03-01, past its 1900 leap-year bug). */
const EXCEL_EPOCH = Date.UTC(1899, 11, 30);
const FIRST_DAY = Date.UTC(1900, 2, 1);

const isDigit = (text: string, at: number): boolean => {
  const c = text.charCodeAt(at);
  return c >= 48 && c <= 57;
};
const twoDigits = (text: string, at: number): number => (text.charCodeAt(at) - 48) * 10 + text.charCodeAt(at + 1) - 48;

/** The day of the last date seen (rows in time order share it): its text and Date.UTC, or NaN if Excel cannot hold it. */
let lastDate = "";
let lastDay = Number.NaN;

/**
 * `excelDate` of CKAN's usual timestamp text, `YYYY-MM-DDTHH:MM:SS` with or without a fraction, read
 * digit by digit with the day kept from the value before; null for any other text (the general path).
 */
function timestampSerial(text: string): { serial: string; style: number } | undefined | null {
  const n = text.length;
  if (
    n < 19 ||
    text.charCodeAt(4) !== 45 ||
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(13) !== 58 ||
    text.charCodeAt(16) !== 58
  )
    return null;
  const t = text.charCodeAt(10);
  if (t !== 84 && t !== 32) return null;
  for (const at of [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]) if (!isDigit(text, at)) return null;
  let millis = 0;
  let fractionNonZero = false;
  if (n > 19) {
    if (text.charCodeAt(19) !== 46 || n === 20) return null;
    for (let at = 20; at < n; at++) {
      if (!isDigit(text, at)) return null;
      const d = text.charCodeAt(at) - 48;
      if (d !== 0) {
        // Below a millisecond, Excel shows nothing: such a timestamp keeps its text.
        if (at >= 23) return undefined;
        fractionNonZero = true;
      }
      if (at < 23) millis += d * 10 ** (22 - at);
    }
  }
  const date = text.slice(0, 10);
  if (date !== lastDate) {
    lastDate = date;
    const y = Number(text.slice(0, 4));
    const mo = twoDigits(text, 5);
    const d = twoDigits(text, 8);
    const day = Date.UTC(y, mo - 1, d);
    const check = new Date(day);
    lastDay =
      y < 1900 || check.getUTCDate() !== d || check.getUTCMonth() !== mo - 1 || day < FIRST_DAY ? Number.NaN : day;
  }
  if (Number.isNaN(lastDay)) return undefined;
  const h = twoDigits(text, 11);
  const mi = twoDigits(text, 14);
  const s = twoDigits(text, 17);
  if (h > 23 || mi > 59 || s > 59) return undefined;
  const ms = h * 3_600_000 + mi * 60_000 + s * 1000 + millis;
  return {
    serial: serialText(lastDay, ms),
    style: fractionNonZero ? STYLE.dateTimeMs : STYLE.dateTime,
  };
}

/** A serial's fraction of a day, in units of 1e-12 day: its 12 decimal places. */
export const fractionUnits = (ms: number): number => Math.round((ms * 1e7) / 864);

/**
 * The serial of the time `ms` into the day `day` (a Date.UTC): whole days, then 12 decimal places
 * (86 ns, far below the millisecond Excel shows) without trailing zeros, from integers: exact, and
 * cheaper than the shortest text of the double sum (String took a third of a timestamp cell's time).
 */
export function serialText(day: number, ms: number): string {
  const days = String((day - EXCEL_EPOCH) / 86_400_000);
  if (ms === 0) return days;
  let units = fractionUnits(ms);
  let places = 12;
  while (units % 10 === 0) {
    units /= 10;
    places--;
  }
  return `${days}.${String(units).padStart(places, "0")}`;
}

/** An Excel date serial and its style, or undefined: a value Excel cannot hold exactly stays text. */
export function excelDate(text: string): { serial: string; style: number } | undefined {
  const fast = timestampSerial(text);
  return fast === null ? excelDateOfAnyText(text) : fast;
}

/** `excelDate` by the pattern, for any date or timestamp text (exported for the spec that holds the fast path to it). */
export function excelDateOfAnyText(text: string): { serial: string; style: number } | undefined {
  const m = DATE_TIME.exec(text);
  if (m === null) return undefined;
  const [, y, mo, d, h = "0", mi = "0", s = "0", fraction = ""] = m;
  // Below a millisecond, Excel shows nothing: such a timestamp keeps its text.
  if (/[1-9]/.test(fraction.slice(3))) return undefined;
  // Date.UTC reads years 0 to 99 as 1900 to 1999: such years are before Excel's first day anyway.
  if (Number(y) < 1900) return undefined;
  const day = Date.UTC(Number(y), Number(mo) - 1, Number(d));
  const date = new Date(day);
  if (date.getUTCDate() !== Number(d) || date.getUTCMonth() !== Number(mo) - 1 || day < FIRST_DAY) return undefined;
  const ms =
    Number(h) * 3_600_000 + Number(mi) * 60_000 + Number(s) * 1000 + Number(fraction.slice(0, 3).padEnd(3, "0"));
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined;
  const serial = serialText(day, ms);
  const style = m[4] === undefined ? STYLE.date : /[1-9]/.test(fraction) ? STYLE.dateTimeMs : STYLE.dateTime;
  return { serial, style };
}

const XML_SPECIAL = /[&<>\r\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|_(?=x[0-9a-fA-F]{4}_)/g;

/**
 * Text as cell XML content: markup escaped, CR as a character reference (XML would read it as LF),
 * characters XML cannot carry as Excel's `_xHHHH_`, and a literal `_xHHHH_` escaped as `_x005F_`.
 */
export function xmlText(text: string): string {
  return text.replace(XML_SPECIAL, (c) => {
    if (c === "&") return "&amp;";
    if (c === "<") return "&lt;";
    if (c === ">") return "&gt;";
    if (c === "\r") return "&#13;";
    if (c === "_") return "_x005F_";
    return `_x${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}_`;
  });
}

/** A text cell: an inline string, which a spreadsheet shows as it is and never runs as a formula. */
export function textCell(text: string, style = 0): string {
  let shown = text;
  if (shown.length > MAX_CELL_TEXT) {
    const note = ` [cut: ${text.length} characters; an Excel cell holds ${MAX_CELL_TEXT}]`;
    let cut = shown.slice(0, MAX_CELL_TEXT - note.length);
    // Never half an emoji: a high surrogate without its pair is not a character.
    if (/[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1);
    shown = cut + note;
  }
  const space = /^\s|\s$/.test(shown) ? ' xml:space="preserve"' : "";
  return `<c${style === 0 ? "" : ` s="${style}"`} t="inlineStr"><is><t${space}>${xmlText(shown)}</t></is></c>`;
}

/** CKAN's JSON text of a string value, unquoted. */
const unquote = (raw: string): string => (raw.includes("\\") ? (JSON.parse(raw) as string) : raw.slice(1, -1));

/**
 * One cell from CKAN's exact JSON text for the value, by the column's kind, and the width it shows
 * at (characters). Null and a missing value are an empty cell.
 */
export function cellXml(raw: string | undefined, kind: CellKind): [xml: string, width: number] {
  if (raw === undefined || raw === "null") return ["<c/>", 0];
  if (kind === "json") return [textCell(raw), raw.length];
  const text = raw.charCodeAt(0) === 34 ? unquote(raw) : raw;
  if (kind === "number" || kind === "float") {
    const value = exactDouble(text, kind === "number" ? 15 : 17);
    if (value !== undefined) return [`<c><v>${value}</v></c>`, text.length];
  } else if (kind === "bool") {
    if (text === "true" || text === "false") return [`<c t="b"><v>${text === "true" ? 1 : 0}</v></c>`, 5];
  } else if (kind === "date" || kind === "timestamp") {
    const date = excelDate(text);
    if (date !== undefined)
      return [
        `<c s="${date.style}"><v>${date.serial}</v></c>`,
        date.style === STYLE.date ? 10 : date.style === STYLE.dateTime ? 19 : 23,
      ];
  }
  return [textCell(text), text.length];
}

/** Text that `textCell` writes as it is: no markup to escape, no edge space, short enough. */
const NEEDS_ESCAPING = /^\s|\s$|[&<>\r\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|_x[0-9a-fA-F]{4}_/;
const utf8 = new TextEncoder();
const EMPTY_CELL = utf8.encode("<c/>");
const NUMBER_OPEN = utf8.encode("<c><v>");
const NUMBER_CLOSE = utf8.encode("</v></c>");
const TEXT_OPEN = utf8.encode('<c t="inlineStr"><is><t>');
const TEXT_CLOSE = utf8.encode("</t></is></c>");

function writeText(out: ByteWriter, text: string): void {
  if (text.length > MAX_CELL_TEXT || NEEDS_ESCAPING.test(text)) {
    out.text(textCell(text));
    return;
  }
  out.bytes(TEXT_OPEN);
  out.text(text);
  out.bytes(TEXT_CLOSE);
}

/**
 * `cellXml`'s bytes written into `out` (the same bytes: its common cases without building the
 * cell's string), returning the width it shows at.
 */
export function writeCell(out: ByteWriter, raw: string | undefined, kind: CellKind): number {
  if (raw === undefined || raw === "null") {
    out.bytes(EMPTY_CELL);
    return 0;
  }
  if (kind === "json") {
    writeText(out, raw);
    return raw.length;
  }
  const text = raw.charCodeAt(0) === 34 ? unquote(raw) : raw;
  if (kind === "text") {
    writeText(out, text);
    return text.length;
  }
  if (kind === "number" || kind === "float") {
    const value = exactDouble(text, kind === "number" ? 15 : 17);
    if (value === undefined) {
      writeText(out, text);
    } else {
      out.bytes(NUMBER_OPEN);
      out.text(value);
      out.bytes(NUMBER_CLOSE);
    }
    return text.length;
  }
  const [xml, width] = cellXml(raw, kind);
  out.text(xml);
  return width;
}
