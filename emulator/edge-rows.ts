import { hash, unitDouble } from "./hash.ts";
import { longDecimal } from "./sample-rows.ts";
import { defineTable, type Column, type Table, type Value } from "./schema.ts";

// The table behind the `edge` resource: the columns of the table the real CKAN 2.12 answers were
// recorded over (test/fixtures/ckan-2.12), with its recorded rows (1-12, and 37, which the recorded
// full-text searches return) copied value for value. The other rows are generated and mix the same
// kinds of values in: numerics with 29 digits or trailing zeros, floats that print with exponents,
// CR/LF/tabs/quotes/commas, formula-like text, arrays holding "{", quotes, the text NULL and null
// elements, json with 20-digit integers and \u escapes, empty strings, and nulls of every type.

export const EDGE_ROWS = 4321;

export const EDGE_COLUMNS: readonly Column[] = [
  { id: "_id", type: "int" },
  { id: "id", type: "int4" },
  { id: "amount", type: "numeric" },
  { id: "ratio", type: "float8" },
  { id: "category", type: "text" },
  { id: "name", type: "text" },
  { id: "note", type: "text" },
  { id: "formula", type: "text" },
  { id: "created", type: "timestamp" },
  { id: "day", type: "date" },
  { id: "active", type: "bool" },
  { id: "tags", type: "_text" },
  { id: "meta", type: "json" },
];

type EdgeRow = readonly [
  amount: string | null,
  ratio: number | null,
  name: string | null,
  note: string | null,
  formula: string | null,
  created: string | null,
  active: boolean | null,
  tags: readonly (string | null)[] | null,
  meta: string | null,
];

/** The json the recorded table stores in most rows, as CKAN stored it (Python's json.dumps). */
function storedMeta(k: number, word: string, f: string): string {
  return `{"k": ${k}, "w": "${word}", "f": ${f}, "u": "\\u00d1and\\u00fa", "nested": {"a": [1, "x", null, true]}, "big": 12345678901234567890}`;
}
const QUOTED_META = '{"q": "say \\"hi\\", then\\nleave", "e": 1e-07}';

/** Rows as recorded from the real table, by id (category and day follow from the id). */
const RECORDED: ReadonlyMap<number, EdgeRow> = new Map<number, EdgeRow>([
  [
    1,
    [
      "-82469.50",
      24044285744692.574,
      "glacier, glacier and glacier",
      "note 1 glacier",
      "+desert",
      "2020-01-01T00:16:17.500000",
      false,
      ["alpha", "beta"],
      storedMeta(1, "glacier", "1.0"),
    ],
  ],
  [
    2,
    [
      "-52307",
      1.738914190048968e16,
      'He said "river" twice ""',
      "note 2 river",
      "-403",
      "2020-01-01T00:32:34",
      false,
      ["a,b", 'say "hi"'],
      storedMeta(2, "river", "2.5"),
    ],
  ],
  [
    3,
    [
      "0.000001",
      0.1,
      "line one\nline two 3",
      "note 3 meadow",
      "@cmd",
      "2020-01-01T00:48:51.825000",
      true,
      [],
      storedMeta(3, "meadow", "1.0"),
    ],
  ],
  [
    4,
    [
      "12345678901234567890.123456789",
      0.05991945753341821,
      "crlf one\r\ntwo river",
      "note 4 river",
      "-12.5",
      "2020-01-01T01:05:08.500000",
      false,
      ["Ñandú", "back\\slash", "NULL"],
      storedMeta(4, "river", "2.5"),
    ],
  ],
  [
    5,
    [
      "-0.50",
      -3.407019206677593e17,
      "Ñandú – Zürich ☃ 5",
      "note 5 summit",
      "plain summit",
      "2020-01-01T01:21:25",
      false,
      ["with space", "{brace}", null],
      null,
    ],
  ],
  [
    6,
    [
      "1000",
      0.0003313917377998955,
      "  padded river  ",
      "note 6 river",
      "\tTabbed",
      "2020-01-01T01:37:42.296000",
      true,
      ["x"],
      storedMeta(6, "river", "2.5"),
    ],
  ],
  [
    7,
    [
      "42583.010",
      -3.6762611479600606e-10,
      "glacier;glacier\tglacier|x",
      "note 7 glacier",
      "\r\nstarts CRLF",
      "0099-01-02T03:04:05",
      null,
      ["quote'single", "semi;colon", "new\nline"],
      storedMeta(0, "glacier", "1.0"),
    ],
  ],
  [
    8,
    [
      "0",
      62810246888.63707,
      'mix, "q"\nnext, \'s 8',
      "note 8 river",
      "＝1+1",
      "2020-01-01T02:10:16",
      false,
      null,
      storedMeta(1, "river", "2.5"),
    ],
  ],
  [
    9,
    [
      "-50697.42",
      4350256106.726603,
      "",
      "note 9 canyon",
      " =spaced",
      "2020-01-01T02:26:33.872000",
      true,
      ["alpha", "beta"],
      QUOTED_META,
    ],
  ],
  [
    10,
    [
      "67394.67",
      -4.3350082172361736e20,
      "canyon 10",
      "note 10 canyon",
      "+3",
      "2020-01-01T02:42:50.500000",
      false,
      ["a,b", 'say "hi"'],
      null,
    ],
  ],
  [
    11,
    [
      "-50781.50",
      41662401151.99432,
      "canyon, canyon and canyon",
      null,
      "-",
      "2020-01-01T02:59:07",
      false,
      [],
      storedMeta(4, "canyon", "1.0"),
    ],
  ],
  [
    12,
    [
      "-9588",
      0.04445147196854881,
      'He said "summit" twice ""',
      "note 12 summit",
      "1e5",
      "2020-01-01T03:15:24.382000",
      true,
      ["Ñandú", "back\\slash", "NULL"],
      storedMeta(5, "summit", "2.5"),
    ],
  ],
  [
    37,
    [
      "-32593.850",
      4.569263641556555e18,
      "glacier;glacier\tglacier|x",
      "note 37 glacier",
      "+.5",
      "2020-01-01T10:02:29.500000",
      null,
      ["with space", "{brace}", null],
      storedMeta(2, "glacier", "1.0"),
    ],
  ],
]);

const CATEGORIES = ["alpha", "beta", "gamma", "delta", "epsilon"];
const WORDS = ["glacier", "river", "meadow", "canyon", "summit"];
const TAGS: readonly (readonly (string | null)[] | null)[] = [
  ["alpha", "beta"],
  ["a,b", 'say "hi"'],
  [],
  ["Ñandú", "back\\slash", "NULL"],
  ["with space", "{brace}", null],
  ["x"],
  ["quote'single", "semi;colon", "new\nline"],
  null,
  ["{", "}"],
  [""],
  [null],
  ["crlf\r\nend", "tab\there"],
];
// 2020-01-01T00:00:00Z in milliseconds; rows are about 977.5 s apart, as in the recorded table.
const EPOCH_MS = Date.UTC(2020, 0, 1);
const DAY_MS = 86_400_000;

function pick<T>(list: readonly T[], h: number): T {
  return list[h % list.length] as T;
}

function amount(index: number, id: number): string | null {
  const h = hash(index, 31);
  if (id % 19 === 0) return null;
  switch (h % 10) {
    case 0:
      return longDecimal(index, 32);
    case 1:
      return `-0.${((h >>> 8) % 9) + 1}0`;
    case 2:
      return `0.00000${((h >>> 8) % 9) + 1}`;
    case 3:
      return String(((h >>> 8) % 200_001) - 100_000);
    case 4:
      return "0";
    case 5:
      return `${((h >>> 8) % 200_000) - 100_000}.${String((h >>> 4) % 100).padStart(2, "0")}0`;
    default: {
      const cents = ((h >>> 8) % 20_000_000) - 10_000_000;
      return `${cents < 0 ? "-" : ""}${Math.floor(Math.abs(cents) / 100)}.${String(Math.abs(cents) % 100).padStart(2, "0")}`;
    }
  }
}

function ratio(index: number, id: number): number | null {
  if (id % 23 === 0) return null;
  const h = hash(index, 41);
  if (h % 11 === 0) return [0.1, 2.5, -1, 1e-7, 1e15, 123456789012345680000][(h >>> 8) % 6] ?? 0.1;
  // 1 <= mantissa < 10, spread over exponents -12..22: every second value prints with an exponent.
  const mantissa = 1 + unitDouble(index, 42) * 9;
  const exponent = ((h >>> 4) % 35) - 12;
  const value = Number(`${mantissa}e${exponent}`);
  return h & 1 ? -value : value;
}

function name(id: number, word: string, h: number): string | null {
  switch (h % 12) {
    case 0:
      return `${word}, ${word} and ${word}`;
    case 1:
      return `He said "${word}" twice ""`;
    case 2:
      return `line one\nline two ${id}`;
    case 3:
      return `crlf one\r\ntwo ${word}`;
    case 4:
      return `Ñandú – Zürich ☃ ${id}`;
    case 5:
      return `  padded ${word}  `;
    case 6:
      return `${word};${word}\t${word}|x`;
    case 7:
      return `mix, "q"\nnext, 's ${id}`;
    case 8:
      return "";
    case 9:
      return null;
    case 10:
      return `${word} 🌲 ${id}`;
    default:
      return `${word} ${id}`;
  }
}

function formula(id: number, h: number): string | null {
  const forms = [
    "+desert",
    `-${h % 1000}`,
    "@cmd",
    "-12.5",
    "plain summit",
    "\tTabbed",
    "\r\nstarts CRLF",
    "＝1+1",
    " =spaced",
    "+3",
    "-",
    "1e5",
    "+.5",
    `=SUM(A${id}:B${id})`,
    `=HYPERLINK("http://example.invalid/${id}","x")`,
    "NULL",
    "",
    null,
  ];
  return pick(forms, h);
}

function created(index: number, id: number): string | null {
  const h = hash(index, 51);
  if (h % 31 === 0) return null;
  const ms = EPOCH_MS + id * 977_500 + ((h >>> 8) % 3 === 0 ? 0 : (h >>> 12) % 1000);
  const micros = (h >>> 5) % 4 === 0 ? String((h >>> 3) % 1000).padStart(3, "0") : "000";
  const iso = new Date(ms).toISOString();
  const fraction = `${iso.slice(20, 23)}${micros}`;
  return fraction === "000000" ? iso.slice(0, 19) : `${iso.slice(0, 19)}.${fraction}`;
}

function meta(id: number, word: string, h: number): string | null {
  if (id % 5 === 0) return null;
  if (id % 9 === 0) return QUOTED_META;
  if (h % 13 === 0) return '{"big":-98765432109876543210,"ratio":1.50,"u":"\\u00e9\\ud83c\\udf32","list":[ 1 , 2 ]}';
  return storedMeta(id % 7, word, id % 2 === 1 ? "1.0" : "2.5");
}

function generated(index: number): EdgeRow {
  const id = index + 1;
  const h = hash(index, 61);
  // Below id 37 no generated row uses "glacier": as in the recording, rows 1, 7 and 37 are then the
  // first three best matches of a search for "glacier" (each holds the word five times).
  const chosen = pick(WORDS, h >>> 4);
  const word = id < 37 && chosen === "glacier" ? "meadow" : chosen;
  const activeRoll = (h >>> 20) % 7;
  return [
    amount(index, id),
    ratio(index, id),
    name(id, word, h >>> 8),
    id % 11 === 0 ? null : `note ${id} ${word}`,
    formula(id, hash(index, 71)),
    created(index, id),
    activeRoll === 0 ? null : activeRoll % 2 === 0,
    pick(TAGS, hash(index, 81)),
    meta(id, word, hash(index, 91)),
  ];
}

// Generating a row is cheap, but a scan asks for each of its cells: keep the last row at hand.
let lastIndex = -1;
let lastRow: EdgeRow = generated(0);

function rowOf(index: number): EdgeRow {
  if (index !== lastIndex) {
    lastRow = RECORDED.get(index + 1) ?? generated(index);
    lastIndex = index;
  }
  return lastRow;
}

function dayText(id: number): string | null {
  if (id > 12 && id % 29 === 0) return null;
  return new Date(Date.UTC(2000, 0, 1) + (id - 1) * DAY_MS).toISOString().slice(0, 10);
}

/** The value of column `column` (an EDGE_COLUMNS position) in row `index` (0-based). */
export function edgeCell(column: number, index: number): Value {
  const id = index + 1;
  switch (column) {
    case 0:
    case 1:
      return id;
    case 4:
      return CATEGORIES[id % CATEGORIES.length] ?? "alpha";
    case 9:
      return dayText(id);
    default: {
      const row = rowOf(index);
      const position = column < 4 ? column - 2 : column < 9 ? column - 3 : column - 4;
      const value = row[position];
      if (value === undefined) throw new RangeError(`no column ${column}`);
      return value;
    }
  }
}

export function edgeTable(rows = EDGE_ROWS): Table {
  return defineTable(EDGE_COLUMNS, rows, edgeCell);
}
