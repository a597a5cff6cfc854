// The bench upstream's tables: each row a pure function of its `_id`, each cell kept as the two texts
// CKAN writes for it (CKAN builds every records format in SQL, so they agree on each value's text):
// the JSON text of `lists`/`objects` records and the COPY text of `records_format: "csv"` and the dump.

export interface Field {
  id: string;
  type: string;
}

/** One row: each cell's JSON text, and its COPY text (null for SQL NULL, an empty unquoted cell). */
export interface Cells {
  json: string[];
  copy: (string | null)[];
}

export interface TableShape {
  name: string;
  fields: readonly Field[];
  cells(id: number): Cells;
}

/** A cheap integer hash, so every value is a pure function of the row number. */
function mix(n: number): number {
  let h = Math.imul(n ^ 0x9e3779b9, 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const EPOCH = Date.UTC(2020, 0, 1);
const DAY_MS = 86_400_000;
const days = new Map<number, string>();
const two = (n: number): string => (n < 10 ? `0${n}` : String(n));
/** `2020-01-01T00:00:00`, as to_char writes a timestamp (dates cached: Date is slow for a million rows). */
function stamp(ms: number): string {
  const day = Math.floor(ms / DAY_MS);
  let date = days.get(day);
  if (date === undefined) days.set(day, (date = new Date(day * DAY_MS).toISOString().slice(0, 10)));
  const s = Math.floor((ms - day * DAY_MS) / 1000);
  return `${date}T${two(Math.floor(s / 3600))}:${two(Math.floor(s / 60) % 60)}:${two(s % 60)}`;
}

const PLAIN_TEXT = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;

/**
 * Cells of plain JavaScript values, as to_json and COPY write them (booleans t/f in COPY). Each value
 * is turned into text once, and JSON.stringify only runs on strings that need escaping: generating a
 * million rows is otherwise mostly number formatting and JSON.stringify.
 */
function plainCells(values: unknown[]): Cells {
  const json: string[] = new Array(values.length);
  const copy: (string | null)[] = new Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null || v === undefined) {
      json[i] = "null";
      copy[i] = null;
    } else if (typeof v === "string") {
      json[i] = PLAIN_TEXT.test(v) ? `"${v}"` : JSON.stringify(v);
      copy[i] = v;
    } else if (typeof v === "boolean") {
      json[i] = v ? "true" : "false";
      copy[i] = v ? "t" : "f";
    } else {
      const text = String(v);
      json[i] = text;
      copy[i] = text;
    }
  }
  return { json, copy };
}

const NAMES = [
  'Café "Le Zinc", Montréal',
  "Smith, John",
  "=SUM(A1:A9)",
  "Ωmega – Δelta",
  "plain name",
  "東京タワー",
  "-12 apples",
  "O'Brien & Sons",
];
const CATEGORIES = ["alpha", "beta", "gamma", "delta"];
const CITIES = ["Zürich", "São Paulo", "Kraków", "Montréal", "Reykjavík", "東京", "Αθήνα", "Québec"];

/** 12 columns of ordinary values (int, numeric, float8, text with commas/quotes/non-ASCII, timestamp, bool, nulls). */
export const BASE: TableShape = {
  name: "base",
  fields: [
    { id: "_id", type: "int" },
    { id: "record_no", type: "int" },
    { id: "amount", type: "numeric" },
    { id: "ratio", type: "float8" },
    { id: "name", type: "text" },
    { id: "category", type: "text" },
    { id: "created", type: "timestamp" },
    { id: "active", type: "bool" },
    { id: "quantity", type: "int" },
    { id: "score", type: "float8" },
    { id: "city", type: "text" },
    { id: "note", type: "text" },
    { id: "updated", type: "timestamp" },
  ],
  cells(id) {
    const h = mix(id);
    const g = mix(h);
    return plainCells([
      id,
      100000 + id,
      ((h % 2_000_000) - 500_000) / 100,
      g / 4294967296,
      `${NAMES[h % NAMES.length]} #${id}`,
      CATEGORIES[g % CATEGORIES.length],
      stamp(EPOCH + id * 37_000),
      (h & 1) === 1,
      h % 10 === 0 ? null : h % 1000,
      g % 7 === 0 ? null : Math.round(((h % 100000) * 1000) / 997) / 1000,
      CITIES[(h >>> 3) % CITIES.length],
      h % 3 === 0 ? null : `Note ${id}: "quoted", with commas, ümlauts and a ½`,
      g % 5 === 0 ? null : stamp(EPOCH + id * 41_000 + (g % 86400) * 1000),
    ]);
  },
};

// What real portals hold beyond plain values: codes and phone numbers that look like formulas,
// text[] columns, json documents, numerics with more digits than a double keeps.
const FORMULAS = [
  '=HYPERLINK("http://example.org","x")',
  "+41 44 668 18 00",
  "-12.5",
  "@mention",
  "=1+2",
  "\tTabbed",
  "+",
  "-",
  "=A1*B1",
  "@SUM(1)",
];
const WORDS = [
  "glacier",
  "river",
  "meadow",
  "canyon",
  "Ñandú",
  "a,b",
  'say "hi"',
  "back\\slash",
  "NULL",
  "{brace}",
  "=cmd",
  "-3",
];

/** array_to_json of a text[]: compact, elements escaped as PostgreSQL's escape_json does. */
const arrayJson = (items: (string | null)[]): string =>
  `[${items.map((s) => (s === null ? "null" : JSON.stringify(s))).join(",")}]`;

/** A json column as CKAN stored it (Python's json.dumps: spaces after separators, non-ASCII escaped). */
function storedJson(id: number, h: number): string {
  const word = WORDS[h % WORDS.length]!;
  const ascii = JSON.stringify(word).replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  return `{"k": ${id}, "w": ${ascii}, "f": ${h % 2 ? "1.0" : "2.5"}, "nested": {"a": [1, "x", null, true]}, "big": 1234567890123456789${h % 10}}`;
}

/** 29 significant digits now and then (every digit must survive), else cents with trailing zeros. */
function amountText(id: number, h: number): string {
  if (id % 7 === 0)
    return `${h % 2 ? "-" : ""}1234567890123456789${h % 10}.${String(h % 1_000_000_000).padStart(9, "0")}`;
  const cents = (h % 1_600_000) - 600_000;
  return `${cents < 0 ? "-" : ""}${Math.floor(Math.abs(cents) / 100)}.${String(Math.abs(cents) % 100).padStart(2, "0")}`;
}

/** 10 columns with text[] and json columns and many formula-like texts. */
export const RICH: TableShape = {
  name: "rich",
  fields: [
    { id: "_id", type: "int" },
    { id: "id", type: "int4" },
    { id: "code", type: "text" },
    { id: "amount", type: "numeric" },
    { id: "tags", type: "_text" },
    { id: "meta", type: "json" },
    { id: "label", type: "text" },
    { id: "phone", type: "text" },
    { id: "created", type: "timestamp" },
    { id: "active", type: "bool" },
    { id: "ratio", type: "float8" },
  ],
  cells(id) {
    const h = mix(id + 7);
    const g = mix(h);
    const plain = plainCells([
      id,
      id,
      h % 5 < 3 ? FORMULAS[g % FORMULAS.length] : `C-${id}`,
      null, // amount, below
      null, // tags, below
      null, // meta, below
      h % 11 === 0 ? null : `${WORDS[g % WORDS.length]}, "${WORDS[h % WORDS.length]}"\n#${id}`,
      g % 3 === 0 ? `+1 555 ${String(id % 10000).padStart(4, "0")}` : `=${id % 97}`,
      stamp(EPOCH + id * 43_000),
      (g & 2) === 2,
      g % 13 === 0 ? null : (h % 1_000_000) / 7,
    ]);
    const amount = h % 19 === 0 ? null : amountText(id, g);
    const tags =
      h % 9 === 0
        ? null
        : Array.from({ length: g % 4 }, (_, i) => (i === 2 && h % 2 ? null : WORDS[(g >>> (i * 4)) % WORDS.length]!));
    const meta = g % 6 === 0 ? null : storedJson(id, h);
    // numeric: the digits as PostgreSQL writes them, a JSON number as they stand.
    plain.json[3] = amount ?? "null";
    plain.copy[3] = amount;
    // text[] and json: JSON text in every format; a null one is the text `null`, in COPY too.
    plain.json[4] = tags === null ? "null" : arrayJson(tags);
    plain.copy[4] = tags === null ? "null" : arrayJson(tags);
    plain.json[5] = meta ?? "null";
    plain.copy[5] = meta ?? "null";
    return plain;
  },
};

/** PostgreSQL COPY CSV of some cells: LF ends the row, NULL is nothing, quotes only where needed. */
export function copyLine(cells: (string | null)[]): string {
  let line = "";
  for (let i = 0; i < cells.length; i++) {
    const text = cells[i];
    if (i > 0) line += ",";
    if (text === null || text === undefined) continue;
    line += text === "" || /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  }
  return `${line}\n`;
}
