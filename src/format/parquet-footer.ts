import { ByteWriter, type SchemaElement } from "hyparquet-writer";
import { writeMetadata } from "hyparquet-writer/src/metadata.js";
import type { ChunkEntry } from "./parquet-chunk.ts";

// The file's end: its footer (schema, and each row group's column chunks: where they lie, their
// sizes and statistics) written by hyparquet-writer's metadata writer from the entries the row groups
// left, then `PAR1`. The entries are all the footer needs, so a file written over several
// invocations ends with the entries the earlier ones carried.

export interface RowGroupEntry {
  rows: number;
  chunks: ChunkEntry[];
}

/**
 * What a file written so far leaves for the rest of it: its row groups' entries, each packed as
 * `[rows, ...chunks]` and each chunk as `[size, raw, dict, nulls, min, max, exact]` (names would be
 * half its JSON: a Workflow step's result holds 1 MiB).
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

/** The footer's row groups, their chunks laid end to end after `PAR1`. */
function rowGroups(columns: SchemaElement[], groups: RowGroupEntry[]) {
  let at = 4;
  return groups.map((group) => {
    const start = at;
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
  });
}

/** The footer and the closing `PAR1` of a file of `groups` with `schema` (its root first). */
export function parquetFooter(schema: SchemaElement[], groups: RowGroupEntry[], createdBy: string): Uint8Array {
  const writer = new ByteWriter();
  writeMetadata(writer, {
    version: 2,
    created_by: createdBy,
    schema,
    num_rows: BigInt(groups.reduce((n, g) => n + g.rows, 0)),
    row_groups: rowGroups(schema.slice(1), groups),
    metadata_length: 0,
  });
  writer.appendUint32(0x31524150);
  return writer.getBytes().slice();
}
