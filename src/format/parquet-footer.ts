import { ByteWriter, type SchemaElement } from "hyparquet-writer";
import { writeMetadata } from "hyparquet-writer/src/metadata.js";
import type { ChunkEntry } from "./parquet-chunk.ts";

// The file's end: its footer (schema, and each row group's column chunks: where they lie, their
// sizes and statistics) written by hyparquet-writer's metadata writer from the entries the row groups
// left, then `PAR1`. The entries are all the footer needs, so a file written over several
// invocations ends with the entries each of them left (kept in R2 between snapshot steps).

export interface RowGroupEntry {
  rows: number;
  chunks: ChunkEntry[];
}

/**
 * What a paused file leaves for its footer: the entries of the row groups written since it was
 * last paused, each packed as `[rows, ...chunks]` and each chunk as `[size, raw, dict, nulls, min,
 * max, exact]` (names would be half its JSON, which the file's last step reads all of).
 */
export type ParquetCarry = { groups: PackedGroup[] };
type PackedChunk = [number, number, number, number, string?, string?, [boolean, boolean]?];
type PackedGroup = [number, ...PackedChunk[]];

export const packGroup = (group: RowGroupEntry): PackedGroup => [
  group.rows,
  ...group.chunks.map((c): PackedChunk => {
    const packed: PackedChunk = [c.size, c.raw, c.dict, c.nulls];
    if (c.min !== undefined) packed.push(c.min, c.max);
    if (c.exact !== undefined) packed.push(c.exact);
    return packed;
  }),
];

export const unpackGroup = ([rows, ...chunks]: PackedGroup): RowGroupEntry => ({
  rows,
  chunks: chunks.map(([size, raw, dict, nulls, min, max, exact]) => ({
    size,
    raw,
    dict,
    nulls,
    ...(min === undefined || max === undefined ? {} : { min, max }),
    ...(exact === undefined ? {} : { exact }),
  })),
});

const utf8 = new TextEncoder();

/** A bound's text (ChunkEntry) as the footer writer takes it for the column's type. */
function bound(text: string, element: SchemaElement, isMin: boolean): boolean | number | bigint | Uint8Array {
  switch (element.type) {
    case "BOOLEAN":
      return text === "true";
    case "INT32":
      return Number(text);
    case "INT64":
      return BigInt(text);
    case "FLOAT":
    case "DOUBLE": {
      // Parquet's order puts -0 below +0: a zero min is -0, a zero max +0.
      const n = Number(text);
      return n === 0 ? (isMin ? -0 : 0) : n;
    }
    default:
      return utf8.encode(text);
  }
}

function statistics(entry: ChunkEntry, element: SchemaElement) {
  return {
    null_count: BigInt(entry.nulls),
    ...(entry.min === undefined || entry.max === undefined
      ? {}
      : {
          min_value: bound(entry.min, element, true),
          max_value: bound(entry.max, element, false),
          ...(entry.exact === undefined
            ? {}
            : {
                ...(entry.exact[0] ? {} : { is_min_value_exact: false }),
                ...(entry.exact[1] ? {} : { is_max_value_exact: false }),
              }),
        }),
  };
}

/** A row group as the footer writer takes it: its chunks from `start` on, laid end to end. */
function rowGroup(columns: SchemaElement[], group: RowGroupEntry, start: number) {
  let at = start;
  let raw = 0;
  const chunks = group.chunks.map((entry, i) => {
    const element = columns[i]!;
    const chunk = {
      file_offset: BigInt(at),
      meta_data: {
        type: element.type!,
        encodings:
          entry.dict > 0
            ? ["PLAIN" as const, "RLE_DICTIONARY" as const, "RLE" as const]
            : ["PLAIN" as const, "RLE" as const],
        path_in_schema: [element.name],
        codec: "SNAPPY" as const,
        num_values: BigInt(group.rows),
        total_uncompressed_size: BigInt(entry.raw),
        total_compressed_size: BigInt(entry.size),
        data_page_offset: BigInt(at + entry.dict),
        ...(entry.dict > 0 ? { dictionary_page_offset: BigInt(at) } : {}),
        statistics: statistics(entry, element),
      },
    };
    at += entry.size;
    raw += entry.raw;
    return chunk;
  });
  return {
    columns: chunks,
    total_byte_size: BigInt(raw),
    num_rows: BigInt(group.rows),
    file_offset: BigInt(start),
    total_compressed_size: BigInt(at - start),
  };
}

/**
 * A list whose elements are made as they are read, each time. The footer writer maps the row groups
 * and its thrift writer reads the mapped list in order (twice: once for its type), so one group's
 * objects live at a time: all of them at once were about 20 times the footer's bytes (1.3 KB a column
 * chunk, measured), which would have made the footer the step's largest memory. Relies on
 * hyparquet-writer (pinned) reading lists only by `length`, `map` and iteration.
 */
class MadeList<T> extends Array<T> {
  static override get [Symbol.species]() {
    return Array;
  }
  readonly #make: (i: number) => T;
  constructor(length: number, make: (i: number) => T) {
    super();
    this.length = length;
    this.#make = make;
  }
  override map<U>(f: (value: T, i: number, array: T[]) => U): U[] {
    return new MadeList<U>(this.length, (i) => f(this.#make(i), i, this));
  }
  override [Symbol.iterator](): ArrayIterator<T> {
    const make = this.#make;
    const length = this.length;
    function* made() {
      for (let i = 0; i < length; i++) yield make(i);
    }
    return made() as unknown as ArrayIterator<T>;
  }
}

/** The footer and the closing `PAR1` of a file of `groups` (packed: see packGroup) with `schema` (its root first). */
export function parquetFooter(schema: SchemaElement[], groups: readonly PackedGroup[], createdBy: string): Uint8Array {
  const starts = new Float64Array(groups.length);
  let at = 4;
  let rows = 0;
  groups.forEach((group, g) => {
    starts[g] = at;
    rows += group[0];
    for (let c = 1; c < group.length; c++) at += (group[c] as PackedChunk)[0];
  });
  const columns = schema.slice(1);
  const writer = new ByteWriter();
  writeMetadata(writer, {
    version: 2,
    created_by: createdBy,
    schema,
    num_rows: BigInt(rows),
    row_groups: new MadeList(groups.length, (g) => rowGroup(columns, unpackGroup(groups[g]!), starts[g]!)),
    metadata_length: 0,
  });
  writer.appendUint32(0x31524150);
  return writer.getBytes().slice();
}
