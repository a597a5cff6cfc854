import { grownBytes, grownEnds, type RecordsReader } from "./batch.ts";
import { isJsonType } from "./guard.ts";
import { BACKSLASH, CLOSE_LIST, COMMA, NotTheJson, OPEN_LIST, OPEN_OBJECT, QUOTE, skipSpaceBytes, skipValueBytes } from "./json-scan.ts";
import type { Column } from "./types.ts";

const utf8 = new TextEncoder();

/**
 * JSON and NDJSON records written straight from CKAN's `lists` records, as bytes: each value's bytes
 * are copied between the keys, never decoded, parsed or encoded again, so a page costs one pass over
 * its bytes. The output is byte for byte what `jsonEncoder`/`ndjsonEncoder` write from the same
 * values (a spec holds them side by side): keys in column order, values as CKAN wrote them.
 *
 * For pages after the first: a JSON record here always follows one already written (`,\n` first).
 */
export function jsonListsReader(columns: Column[], dropFrom: number, ndjson: boolean): RecordsReader {
  const keys = columns.slice(0, dropFrom).map((c, i) => utf8.encode(`${i === 0 ? "{" : ","}${JSON.stringify(c.id)}:`));
  const lead = utf8.encode(ndjson ? "" : ",\n");
  const tail = utf8.encode(keys.length === 0 ? (ndjson ? "{}\n" : "{}") : ndjson ? "}\n" : "}");
  // NDJSON is one record per line: a json value's own line breaks (whitespace) become spaces.
  const oneLine = columns.map((c) => ndjson && isJsonType(c.type));
  const extra = lead.length + tail.length + keys.reduce((n, k) => n + k.length, 0);
  const width = columns.length;
  let bytesPerRow = 0;

  return (b, at) => {
    if (b[at] !== OPEN_LIST) throw new NotTheJson("records are not a list");
    const size = b.length - at;
    // Sized from the last page's rows; grown (rarely) when a page's rows are narrower.
    let out = new Uint8Array(Math.ceil(size + (size / (bytesPerRow || 16)) * extra) + 64);
    let o = 0;
    let ends = new Uint32Array(1024);
    let rows = 0;
    let lastStart = -1;
    let lastEnd = -1;

    let i = skipSpaceBytes(b, at + 1);
    if (b[i] === CLOSE_LIST) return { page: { bytes: out.subarray(0, 0), rows: 0, ends: ends.subarray(0, 0) }, end: i + 1, lastId: undefined };
    const length = b.length;
    for (;;) {
      if (b[i] !== OPEN_LIST) throw new NotTheJson("a record is not a list");
      // A record's output is its input with keys added: room for the rest of the input and one
      // record's keys is room for this record, checked once instead of per value.
      if (o + extra + (length - i) > out.length) out = grownBytes(out, o, extra + (length - i));
      for (let k = 0; k < lead.length; k++) out[o++] = lead[k]!;
      i = skipSpaceBytes(b, i + 1);
      let column = 0;
      if (b[i] !== CLOSE_LIST) {
        for (;;) {
          const start = i;
          if (column >= dropFrom) {
            i = skipValueBytes(b, i);
          } else {
            const key = keys[column]!;
            for (let k = 0; k < key.length; k++) out[o++] = key[k]!;
            const c = b[i];
            if (c === QUOTE) {
              // Scanned and copied in one pass: strings and numbers are most of a page.
              out[o++] = c;
              for (i++; ; i++) {
                if (i >= length) throw new NotTheJson("unterminated string");
                const d = b[i]!;
                out[o++] = d;
                if (d === BACKSLASH) out[o++] = b[++i]!;
                else if (d === QUOTE) break;
              }
              i++;
            } else if (c === OPEN_LIST || c === OPEN_OBJECT) {
              i = skipValueBytes(b, i);
              if (oneLine[column]) {
                for (let k = start; k < i; k++) {
                  const d = b[k]!;
                  out[o++] = d === 10 || d === 13 ? 32 : d;
                }
              } else {
                out.set(b.subarray(start, i), o);
                o += i - start;
              }
            } else {
              for (; i < length; i++) {
                const d = b[i]!;
                if (d === COMMA || d === CLOSE_LIST || d <= 32) break;
                out[o++] = d;
              }
              if (i === start) throw new NotTheJson(`unexpected byte at ${start}`);
            }
          }
          if (column === width - 1) {
            lastStart = start;
            lastEnd = i;
          }
          column++;
          // PostgreSQL writes records without spaces: test for the comma before skipping any.
          if (b[i] === COMMA && b[i + 1]! > 32) {
            i++;
            continue;
          }
          i = skipSpaceBytes(b, i);
          if (b[i] === COMMA) {
            i = skipSpaceBytes(b, i + 1);
            continue;
          }
          if (b[i] === CLOSE_LIST) break;
          throw new NotTheJson("expected a comma in a record");
        }
      }
      if (column !== width) throw new NotTheJson(`a record has ${column} values for ${width} columns`);
      for (let k = 0; k < tail.length; k++) out[o++] = tail[k]!;
      if (rows === ends.length) ends = grownEnds(ends);
      ends[rows++] = o;
      i = skipSpaceBytes(b, i + 1);
      if (b[i] === COMMA) {
        i = skipSpaceBytes(b, i + 1);
        continue;
      }
      if (b[i] === CLOSE_LIST) break;
      throw new NotTheJson("expected a comma between records");
    }
    bytesPerRow = (i - at) / rows;
    const lastId = lastStart < 0 ? undefined : new TextDecoder().decode(b.subarray(lastStart, lastEnd));
    return { page: { bytes: out.subarray(0, o), rows, ends: ends.subarray(0, rows) }, end: i + 1, lastId };
  };
}
