import type { ByteWriter } from "hyparquet-writer";
import { writePageHeader } from "hyparquet-writer/src/datapage.js";
import type { Row } from "../rows/types.ts";
import type { Cells } from "./parquet-from-csv.ts";
import { snappyBlock } from "./snappy.ts";

// One column chunk's pages, written as a row group ends: a data page (v2: levels, then the values
// Snappy-compressed), after a dictionary page for a dictionary-encoded text column. The values
// arrive in typed buffers (parquet-values.ts), so a page is their bytes as they lie.

/**
 * What the footer needs of a column chunk, JSON-safe (a snapshot carries it from step to step):
 * its bytes, uncompressed bytes, its dictionary page's bytes (0: none), nulls; min and max as text
 * (see parquet-footer.ts), false where the bound was shortened; none for a chunk of nulls only.
 */
export interface ChunkEntry {
  size: number;
  raw: number;
  dict: number;
  nulls: number;
  min?: string;
  max?: string;
  exact?: [boolean, boolean];
}

/** A chunk's values as pages take them: PLAIN bytes, or dictionary indexes with their dictionary's PLAIN bytes. */
export interface ChunkValues {
  plain?: Uint8Array;
  dictionary?: { bytes: Uint8Array; entries: number; indexes: Int32Array; count: number };
}

/** Definition levels (1 a value, 0 a null) in the RLE/bit-packed hybrid, width 1, as a v2 page holds them. */
function levels(defs: Uint8Array, rows: number, nulls: number): Uint8Array {
  if (nulls === 0) return runOfOnes(rows);
  const groups = (rows + 7) >>> 3;
  const out = new Uint8Array(10 + groups);
  let p = varint(out, 0, (groups << 1) | 1);
  for (let r = 0; r < rows; r += 8) {
    let byte = 0;
    const end = Math.min(rows, r + 8);
    for (let i = r; i < end; i++) byte |= defs[i]! << (i - r);
    out[p++] = byte;
  }
  return out.subarray(0, p);
}

function runOfOnes(rows: number): Uint8Array {
  const out = new Uint8Array(11);
  const p = varint(out, 0, rows * 2);
  out[p] = 1;
  return out.subarray(0, p + 1);
}

function varint(out: Uint8Array, p: number, n: number): number {
  while (n > 0x7f) {
    out[p++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  out[p++] = n;
  return p;
}

/** Dictionary indexes as a RLE_DICTIONARY page holds them: their bit width, then bit-packed groups of 8. */
export function packedIndexes(indexes: Int32Array, count: number, entries: number): Uint8Array {
  const width = Math.max(1, 32 - Math.clz32(entries - 1));
  const groups = (count + 7) >>> 3;
  const out = new Uint8Array(11 + groups * width);
  out[0] = width;
  let p = varint(out, 1, (groups << 1) | 1);
  let acc = 0;
  let bits = 0;
  const padded = groups * 8;
  for (let i = 0; i < padded; i++) {
    acc |= (i < count ? indexes[i]! : 0) << bits;
    bits += width;
    while (bits >= 8) {
      out[p++] = acc & 0xff;
      acc >>>= 8;
      bits -= 8;
    }
  }
  return out.subarray(0, p);
}

/** A page's header then its bytes, into `writer`; returns the page's bytes uncompressed, header included. */
function page(writer: ByteWriter, header: Parameters<typeof writePageHeader>[1], body: Uint8Array[]): number {
  const start = writer.offset;
  writePageHeader(writer, header);
  const headerBytes = writer.offset - start;
  for (const bytes of body) writer.appendBytes(bytes);
  return headerBytes;
}

/**
 * The chunk's pages into `writer`: its dictionary page (if any) and one data page of `rows` rows.
 * Returns its footer entry but for statistics.
 */
export function writeChunk(
  writer: ByteWriter,
  values: ChunkValues,
  defs: Uint8Array,
  rows: number,
  nulls: number,
): Omit<ChunkEntry, "min" | "max" | "exact"> {
  const start = writer.offset;
  let raw = 0;
  let dict = 0;
  const { dictionary } = values;
  if (dictionary !== undefined) {
    const compressed = snappyBlock(dictionary.bytes);
    raw += dictionary.bytes.byteLength;
    raw += page(
      writer,
      {
        type: "DICTIONARY_PAGE",
        uncompressed_page_size: dictionary.bytes.byteLength,
        compressed_page_size: compressed.byteLength,
        dictionary_page_header: { num_values: dictionary.entries, encoding: "PLAIN" },
      },
      [compressed],
    );
    dict = writer.offset - start;
  }
  const plain =
    dictionary === undefined ? values.plain! : packedIndexes(dictionary.indexes, dictionary.count, dictionary.entries);
  const defined = levels(defs, rows, nulls);
  const compressed = snappyBlock(plain);
  raw += defined.byteLength + plain.byteLength;
  raw += page(
    writer,
    {
      type: "DATA_PAGE_V2",
      uncompressed_page_size: defined.byteLength + plain.byteLength,
      compressed_page_size: defined.byteLength + compressed.byteLength,
      data_page_header_v2: {
        num_values: rows,
        num_nulls: nulls,
        num_rows: rows,
        encoding: dictionary === undefined ? "PLAIN" : "RLE_DICTIONARY",
        definition_levels_byte_length: defined.byteLength,
        repetition_levels_byte_length: 0,
        is_compressed: true,
      },
    },
    [defined, compressed],
  );
  return { size: writer.offset - start, raw, dict, nulls };
}

/** A number as text exactly (String gives the shortest text a double reads back from; ±Infinity too). */
export const asText = (n: number | bigint): string => String(n);

/** Min and max of a chunk as its footer entry keeps them (see ChunkEntry). */
export type Bounds = Pick<ChunkEntry, "min" | "max" | "exact">;

export abstract class ColumnValues {
  protected defs = new Uint8Array(1024);
  protected rows = 0;
  protected nulls = 0;

  /** Column `column` of each row in; returns the characters of CKAN's text read (nulls aside). */
  abstract add(rows: Row[], column: number): number;
  /** Column `column` of the cells' rows [from, to) in (CKAN's CSV pages: parquet-from-csv.ts); returns their text's bytes. */
  abstract addCells(cells: Cells, column: number, from: number, to: number): number;
  /** The values so far as pages take them, with their bounds; the buffers are emptied for the next chunk. */
  protected abstract take(): { values: ChunkValues; bounds: Bounds };

  /** Room for `n` more rows' levels. */
  protected roomForRows(n: number): void {
    if (this.rows + n <= this.defs.length) return;
    const grown = new Uint8Array(Math.max(this.defs.length * 2, this.rows + n));
    grown.set(this.defs.subarray(0, this.rows));
    this.defs = grown;
  }

  /** The chunk's pages into `writer`; returns its footer entry. */
  flush(writer: ByteWriter): ChunkEntry {
    const { values, bounds } = this.take();
    const entry = writeChunk(writer, values, this.defs, this.rows, this.nulls);
    this.rows = 0;
    this.nulls = 0;
    return { ...entry, ...bounds };
  }
}
