import { isNull, type Kind } from "./values.ts";

// A row of CKAN's CSV records as the fold reads it: each cell a stretch of the page's bytes (start,
// end, whether CKAN quoted it), never made a string unless a measure or a new group needs its text.
// One row object is reused for every row of a page.

/** A CSV cell (its text, and whether CKAN quoted it) as CKAN's JSON text of the value, undefined for null. */
export type Cell = (text: string, quoted: boolean) => string | undefined;

const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;

/** How a cell of CKAN's CSV is written in its `lists` records, by the column's kind. */
export function cellOf(kind: Kind): Cell {
  switch (kind) {
    case "int":
    case "bigint":
    case "numeric":
    case "float":
      // NaN and the infinities are quoted in JSON (to_json): only they end in a letter.
      return (text, quoted) => {
        if (text === "" && !quoted) return undefined;
        const last = text.charCodeAt(text.length - 1);
        return last === 78 || last === 121 ? `"${text}"` : text;
      };
    case "bool":
      return (text) => (text === "t" ? "true" : text === "f" ? "false" : undefined);
    // Dates and timestamps hold digits, dashes, colons, a T or a space and a dot: nothing to escape.
    case "date":
    case "timestamp":
      return (text, quoted) => (text === "" && !quoted ? undefined : `"${text}"`);
    // Arrays come as their JSON text in CSV too (a null array as `null`).
    case "array":
      return (text, quoted) => (text === "" && !quoted ? undefined : text);
    default:
      return (text, quoted) =>
        text === "" && !quoted ? undefined : NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;
  }
}

/** Kinds whose null is only ever an empty unquoted cell (a bool's or an array's may be other text). */
const plainNull = (kind: Kind): boolean => kind !== "bool" && kind !== "array";

// A leading U+FEFF is a character of the value (CKAN's lists keep it), not a mark to drop.
const utf8 = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

export class CsvRow {
  /** The bytes the cells are stretches of (their escapes undone): the page's own, rewritten in place. */
  bytes: Uint8Array = new Uint8Array(0);
  readonly starts: Int32Array;
  readonly ends: Int32Array;
  readonly quoted: Uint8Array;
  private readonly cells: Cell[];
  private readonly plain: boolean[];

  constructor(kinds: Kind[]) {
    const width = kinds.length;
    this.starts = new Int32Array(width);
    this.ends = new Int32Array(width);
    this.quoted = new Uint8Array(width);
    this.cells = kinds.map(cellOf);
    this.plain = kinds.map(plainNull);
  }

  get width(): number {
    return this.starts.length;
  }

  /** Cell `c`'s text. */
  textOf(c: number): string {
    return utf8.decode(this.bytes.subarray(this.starts[c], this.ends[c]));
  }

  isNull(c: number): boolean {
    if (this.plain[c]) return this.quoted[c] === 0 && this.starts[c] === this.ends[c];
    return isNull(this.cell(c));
  }

  /** Cell `c` as CKAN's JSON text of the value (undefined for null): what rows of a `lists` page hold. */
  cell(c: number): string | undefined {
    return this.cells[c]!(this.textOf(c), this.quoted[c] === 1);
  }
}
