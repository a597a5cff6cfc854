import { ByteWriter, type SchemaElement } from "hyparquet-writer";
import type { NumericMode } from "../query/formats.ts";
import type { Column, Row } from "../rows/types.ts";
import { parquetColumn } from "./parquet-columns.ts";
import { type ParquetCarry, packGroup, parquetFooter, unpackGroup } from "./parquet-footer.ts";
import type { ColumnValues } from "./parquet-chunk.ts";
import { columnValues } from "./parquet-values.ts";
import type { Continued, Encoder } from "./types.ts";

// Written by our own column writer (parquet-values.ts, parquet-chunk.ts: typed buffers filled
// straight from CKAN's text, one data page per column chunk, Snappy by snappy.ts), with
// hyparquet-writer's page header and footer writers (parquet-footer.ts). Row groups go out as they
// are written; of each, only the footer's entries are kept, a few hundred bytes. hyparquet-writer's
// own column writer, which keeps a value object per cell and encodes each value's text again, cost
// four times the CPU.

/**
 * A row group ends at this many rows, or once its values' JSON text passes GROUP_CHARS characters
 * (wide rows make short groups).
 */
const GROUP_ROWS = 16_384;
const GROUP_CHARS = 2 * 2 ** 20;
/** Rows read in at a time between checks of a group's size. */
const SLICE_ROWS = 4096;
const CREATED_BY = "datastore-export (hyparquet-writer)";
const PAR1 = new Uint8Array([0x50, 0x41, 0x52, 0x31]);

export interface ParquetOptions {
  /** Each column's name: its id, or its data dictionary label. */
  names: string[];
  numeric: NumericMode;
}

export type { ParquetCarry };

/** A Parquet encoder, which can also stop between row groups: the rows so far as a row group, and its row groups' entries. */
export type ParquetEncoder = Encoder<string | Uint8Array> & Required<Pick<Encoder<string | Uint8Array>, "pause">>;

/** Names as Parquet readers need them, unique: a repeated label gets its column's id after it. */
export function uniqueNames(columns: Column[], names: string[]): string[] {
  const seen = new Set<string>();
  return names.map((name, i) => {
    const unique = seen.has(name) ? `${name} (${columns[i]!.id})` : name;
    seen.add(unique);
    return unique;
  });
}

/** The file's schema (its root first) and a value buffer per column. */
function layout(columns: Column[], options: ParquetOptions): { schema: SchemaElement[]; values: ColumnValues[] } {
  const names = uniqueNames(columns, options.names);
  const mapped = columns.map((c, i) => parquetColumn(c, names[i]!, options.numeric));
  return {
    schema: [{ name: "root", num_children: mapped.length }, ...mapped.map((m) => m.element)],
    values: mapped.map(columnValues),
  };
}

function joined(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}

/** Row groups written from pages: each group's bytes, its footer entry kept in `carry`. */
function rowGroups(values: ColumnValues[], carry: ParquetCarry) {
  const writer = new ByteWriter(1 << 20);
  let rows = 0;
  let chars = 0;
  return {
    get rows() {
      return rows;
    },
    get chars() {
      return chars;
    },
    add(page: Row[]): void {
      // Column by column: each column's loop calls its converter at one place, many times over.
      for (let i = 0; i < values.length; i++) chars += values[i]!.add(page, i);
      rows += page.length;
    },
    /**
     * A page's rows in, a slice at a time, and the row groups they fill: a large page makes several,
     * so a group's buffers stay within GROUP_ROWS rows, or GROUP_CHARS and a slice.
     */
    take(page: Row[]): Uint8Array[] {
      const written: Uint8Array[] = [];
      for (let from = 0; from < page.length; ) {
        const to = Math.min(page.length, from + SLICE_ROWS, from + GROUP_ROWS - rows);
        this.add(from === 0 && to === page.length ? page : page.slice(from, to));
        from = to;
        if (rows >= GROUP_ROWS || chars >= GROUP_CHARS) written.push(this.flush());
      }
      return written;
    },
    /** The rows so far as a row group (nothing if none). */
    flush(): Uint8Array {
      if (rows === 0) return new Uint8Array(0);
      writer.index = 0;
      const chunks = values.map((v) => v.flush(writer));
      carry.groups.push(packGroup({ rows, chunks }));
      const bytes = writer.getBytes().slice();
      rows = 0;
      chars = 0;
      return bytes;
    },
  };
}

/**
 * An Apache Parquet file, written as pages arrive: `PAR1`, then row groups, then the footer. The
 * first page is a row group of its own, sent at once (its size tells how large the whole file will
 * be, as a first page of CSV does); later pages gather into groups of up to GROUP_ROWS rows.
 * Snappy-compressed, with each column's min/max statistics, so readers skip row groups by filter.
 * `continued` goes on with a file an earlier invocation began and paused.
 *
 * A failure ends nothing: without its footer, the file is one no Parquet reader opens.
 */
export function parquetEncoder(columns: Column[], options: ParquetOptions, continued?: Continued): ParquetEncoder {
  const { schema, values } = layout(columns, options);
  const carried = continued?.carried as ParquetCarry | undefined;
  const carry: ParquetCarry = structuredClone(carried) ?? { groups: [] };
  const groups = rowGroups(values, carry);
  let firstSent = continued !== undefined;
  return {
    begin: () => (continued === undefined ? PAR1.slice() : ""),
    page(page: Row[]) {
      const written = groups.take(page);
      if (!firstSent) written.push(groups.flush());
      firstSent = true;
      return written.length === 0 ? "" : written.length === 1 ? written[0]! : joined(...written);
    },
    // No row at all still makes a valid file: the header, no row group, the footer with the schema.
    end: () => joined(groups.flush(), parquetFooter(schema, carry.groups.map(unpackGroup), CREATED_BY)),
    failure: () => "",
    pause: () => ({ chunk: groups.flush(), carried: structuredClone(carry) }),
  };
}
