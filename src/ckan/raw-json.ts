// CKAN's answers read without losing a digit: every record value is kept as the exact JSON text CKAN
// wrote (`12345678901234567890.123456789`, `-0.50`, a json column's own spacing), while the small
// rest of the answer (fields, total, next_page) goes through JSON.parse. JSON.parse alone would round
// every number through a double. The bytes are walked with the one JSON scanner (rows/json-bytes.ts),
// and each value is cut from the text decoded once at the UTF-16 offsets that scanner counts.

import type { CopiedRecords, RecordsStream } from "../rows/batch.ts";
import { ownedBytes, release } from "../rows/owned-bytes.ts";
import {
  CLOSE_LIST,
  CLOSE_OBJECT,
  COLON,
  COMMA,
  countUnitsFrom,
  extraBytes,
  memberAt,
  NotTheJson,
  OPEN_LIST,
  OPEN_OBJECT,
  QUOTE,
  skipSpaceBytes,
  skipStringBytes,
  skipValueBytes,
} from "../rows/json-bytes.ts";

/** The source text of one JSON value, exactly as CKAN wrote it (`undefined`: the value is absent). */
export type RawValue = string;

/** A record as scanned: a list of raw values (`lists`), or raw values by column id (`objects`). */
export type RawRecord = RawValue[] | Record<string, RawValue>;

/** Records that are one CSV string hold no number to lose: JSON.parse reads such an answer faster. */
class TextRecords extends Error {}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
const lenientUtf8 = new TextDecoder();
const utf8 = new TextEncoder();

/** A key's text: most keys hold no escapes and need no parse. */
const keyText = (token: string): string => (token.includes("\\") ? (JSON.parse(token) as string) : token.slice(1, -1));

/**
 * Walks the members of the object at `at`, calling `member(key, valueStart)`, which returns where
 * the value ends. Returns the index after the object.
 */
function walkObject(b: Uint8Array, text: string, at: number, member: (key: string, valueAt: number) => number): number {
  if (b[at] !== OPEN_OBJECT) throw new NotTheJson("expected an object");
  let i = skipSpaceBytes(b, at + 1);
  if (b[i] === CLOSE_OBJECT) return i + 1;
  for (;;) {
    if (b[i] !== QUOTE) throw new NotTheJson("expected a key");
    const from = i - extraBytes;
    const keyEnd = skipStringBytes(b, i);
    const key = keyText(text.slice(from, keyEnd - extraBytes));
    i = skipSpaceBytes(b, keyEnd);
    if (b[i] !== COLON) throw new NotTheJson("expected a colon");
    i = skipSpaceBytes(b, member(key, skipSpaceBytes(b, i + 1)));
    const sep = b[i];
    if (sep === CLOSE_OBJECT) return i + 1;
    if (sep !== COMMA) throw new NotTheJson("expected a comma");
    i = skipSpaceBytes(b, i + 1);
  }
}

/** Where the list of raw values at `at` ends; `into` receives the values. */
function scanList(b: Uint8Array, text: string, at: number, into: RawValue[]): number {
  let i = skipSpaceBytes(b, at + 1);
  if (b[i] === CLOSE_LIST) return i + 1;
  for (;;) {
    const from = i - extraBytes;
    const end = skipValueBytes(b, i);
    into.push(text.slice(from, end - extraBytes));
    i = skipSpaceBytes(b, end);
    const sep = b[i];
    if (sep === CLOSE_LIST) return i + 1;
    if (sep !== COMMA) throw new NotTheJson("expected a comma in a record");
    i = skipSpaceBytes(b, i + 1);
  }
}

/** The records list at `at` as raw records; returns where it ends. */
function scanRecords(b: Uint8Array, text: string, at: number, records: RawRecord[]): number {
  let i = skipSpaceBytes(b, at + 1);
  if (b[i] === CLOSE_LIST) return i + 1;
  for (;;) {
    const c = b[i];
    if (c === OPEN_LIST) {
      const row: RawValue[] = [];
      i = scanList(b, text, i, row);
      records.push(row);
    } else if (c === OPEN_OBJECT) {
      // No prototype: a column may be called "constructor" or "__proto__".
      const record = Object.create(null) as Record<string, RawValue>;
      i = walkObject(b, text, i, (key, at) => {
        const from = at - extraBytes;
        const end = skipValueBytes(b, at);
        record[key] = text.slice(from, end - extraBytes);
        return end;
      });
      records.push(record);
    } else {
      throw new NotTheJson("a record is neither a list nor an object");
    }
    i = skipSpaceBytes(b, i);
    const sep = b[i];
    if (sep === CLOSE_LIST) return i + 1;
    if (sep !== COMMA) throw new NotTheJson("expected a comma between records");
    i = skipSpaceBytes(b, i + 1);
  }
}

/**
 * The answer's text, and bytes that encode exactly that text: bytes that are not valid UTF-8 are
 * read as TextDecoder replaces them (as a plain decode would), and then scanned as that text's UTF-8.
 */
function decode(bytes: Uint8Array): { b: Uint8Array; text: string } {
  try {
    return { b: bytes, text: strictUtf8.decode(bytes) };
  } catch {
    const text = lenientUtf8.decode(bytes);
    return { b: utf8.encode(text), text };
  }
}

/**
 * Parses a CKAN answer's bytes: `result.records` as raw records (or the CSV text of
 * `records_format: "csv"`), everything else with JSON.parse. Throws a SyntaxError for text that is not JSON.
 */
export function parseAnswer(bytes: Uint8Array): unknown {
  const { b, text } = decode(bytes);
  // TextDecoder drops a byte order mark: its three bytes have no code unit in the text.
  const bom = b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf ? 3 : 0;
  countUnitsFrom(bom);
  let span: { start: number; end: number; records: RawRecord[] } | undefined;
  try {
    walkObject(b, text, skipSpaceBytes(b, bom), (key, at) => {
      if (key !== "result" || b[at] !== OPEN_OBJECT || span !== undefined) return skipValueBytes(b, at);
      return walkObject(b, text, at, (inner, valueAt) => {
        const c = b[valueAt];
        if (inner !== "records" || (c !== OPEN_LIST && c !== QUOTE)) return skipValueBytes(b, valueAt);
        if (c === QUOTE) throw new TextRecords();
        const records: RawRecord[] = [];
        const start = valueAt - extraBytes;
        const end = scanRecords(b, text, valueAt, records);
        span = { start, end: end - extraBytes, records };
        return end;
      });
    });
  } catch (error) {
    if (error instanceof TextRecords) return JSON.parse(text);
    if (!(error instanceof NotTheJson)) throw error;
    // Not an object of the expected shape: JSON.parse says whether it is JSON at all (an error answer
    // may be a bare string), and such an answer has no records to keep exact.
    span = undefined;
  }
  if (span === undefined) return JSON.parse(text);
  const envelope = JSON.parse(`${text.slice(0, span.start)}null${text.slice(span.end)}`) as {
    result: { records: unknown };
  };
  envelope.result.records = span.records;
  return envelope;
}

/** Bytes of an answer before its records that are worth searching for them: past this, it is read whole. */
const HEAD_LIMIT = 1024 * 1024;
/** The bytes gathered, to begin with: room for an answer's head, or for its rest after the records (fields, total). */
const TAIL_BYTES = 16 * 1024;

/**
 * A `datastore_search` answer read as it arrives: the bytes before `result.records` gathered until
 * the records string opens, the string handed to `records` chunk by chunk (whole rows come out as
 * they complete), the small rest (fields, total, next_page) gathered after it. An answer whose
 * records are not one string (lists, an error, anything unexpected) is gathered whole and read as
 * before (`whole`).
 */
export class StreamedAnswer {
  readonly #records: RecordsStream;
  #gathered: Uint8Array<ArrayBuffer> = ownedBytes(TAIL_BYTES);
  #used = 0;
  /** The answer's text before the records value, once found. */
  #head: string | undefined;
  #whole = false;
  #bytes = 0;
  /** Bytes already searched for the records' key (see `#keyArrived`). */
  #keyFrom = 0;
  #keySeen = false;

  constructor(records: RecordsStream) {
    this.#records = records;
  }

  /** Answer bytes so far. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Whole rows the chunk completed, if any. */
  push(chunk: Uint8Array): CopiedRecords | undefined {
    this.#bytes += chunk.length;
    if (this.#head !== undefined && !this.#records.ended) {
      const got = this.#records.push(chunk);
      if (got.after) this.#gather(got.after);
      return got.records;
    }
    this.#gather(chunk);
    if (this.#head !== undefined || this.#whole) return undefined;
    if (!this.#keyArrived()) {
      if (this.#used > HEAD_LIMIT) this.#whole = true;
      return undefined;
    }
    const at = this.#recordsAt();
    if (at < 0) {
      if (this.#used > HEAD_LIMIT) this.#whole = true;
      return undefined;
    }
    if (this.#gathered[at] !== QUOTE) {
      this.#whole = true;
      return undefined;
    }
    const [head, used] = [this.#gathered, this.#used];
    this.#head = utf8Text(head.subarray(0, at));
    // The head's buffer grew to a whole read, the rest after the records is small: a fresh one for
    // it, and this one freed once the records' first bytes are handed on (copied, see RecordsStream).
    this.#gathered = ownedBytes(TAIL_BYTES);
    this.#used = 0;
    try {
      const got = this.#records.push(head.subarray(at + 1, used));
      if (got.after) this.#gather(got.after);
      return got.records;
    } finally {
      release(head);
    }
  }

  /** The answer's bytes ended: the rows its records stream still kept, the string's end found (see RecordsStream.finish). */
  finish(): CopiedRecords | undefined {
    if (this.#head === undefined || this.#records.ended) return undefined;
    const got = this.#records.finish();
    if (got.after) this.#gather(got.after);
    return got.records;
  }

  /**
   * The answer ended: its envelope with `null` for the records (to JSON.parse: nothing in it to keep
   * exact), or its whole bytes when it was not read as a stream.
   */
  end(): { envelope: string } | { whole: Uint8Array<ArrayBuffer> } {
    if (this.#head === undefined) return { whole: this.#gathered.subarray(0, this.#used) };
    if (!this.#records.ended) throw new NotTheJson("the answer ended inside its records");
    const envelope = `${this.#head}null${utf8Text(this.#gathered.subarray(0, this.#used))}`;
    release(this.#gathered);
    return { envelope };
  }

  #gather(chunk: Uint8Array): void {
    if (this.#used + chunk.length > this.#gathered.length) {
      const bigger = ownedBytes(Math.max(this.#used + chunk.length, this.#gathered.length * 2));
      bigger.set(this.#gathered.subarray(0, this.#used));
      release(this.#gathered);
      this.#gathered = bigger;
    }
    this.#gathered.set(chunk, this.#used);
    this.#used += chunk.length;
  }

  /**
   * Whether the bytes `"records"` have arrived: until then the head is not walked member by member.
   * A long head (CKAN echoes a page's `_id` list before its records) walked at every chunk would
   * cost its length squared; the key is looked for in each chunk's bytes once.
   */
  #keyArrived(): boolean {
    if (this.#keySeen) return true;
    const from = Math.max(0, this.#keyFrom - RECORDS_KEY.length + 1);
    this.#keyFrom = this.#used;
    this.#keySeen = indexOfBytes(this.#gathered, RECORDS_KEY, from, this.#used) >= 0;
    return this.#keySeen;
  }

  /** Where the records value starts in the bytes gathered, or -1 while they do not reach it. */
  #recordsAt(): number {
    try {
      const at = memberAt(this.#gathered.subarray(0, this.#used), "result", "records");
      return at < this.#used ? at : -1;
    } catch (error) {
      if (error instanceof NotTheJson) return -1;
      throw error;
    }
  }
}

const utf8Text = (bytes: Uint8Array): string => lenientUtf8.decode(bytes);

const RECORDS_KEY = new TextEncoder().encode('"records"');

/** Where `needle` first starts in `b[from, to)`, or -1. */
function indexOfBytes(b: Uint8Array, needle: Uint8Array, from: number, to: number): number {
  const first = needle[0]!;
  for (let i = b.indexOf(first, from); i >= 0 && i + needle.length <= to; i = b.indexOf(first, i + 1)) {
    let k = 1;
    while (k < needle.length && b[i + k] === needle[k]) k++;
    if (k === needle.length) return i;
  }
  return -1;
}
