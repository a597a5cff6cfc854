import { ByteWriter, ParquetWriter } from "hyparquet-writer";
import type { Column, Row } from "../rows/types.ts";
import type { NumericMode } from "../query/formats.ts";
import { parquetColumn } from "./parquet-columns.ts";
import type { Encoder } from "./types.ts";

// Written with hyparquet-writer: pure JavaScript (no WebAssembly, nothing Node-only in its browser
// build), its own Snappy, and a writer that takes one row group at a time and writes the footer
// (schema, row groups' offsets and statistics) only at the end. That is the shape of a streamed
// export: each row group's bytes go out as soon as they are written, and nothing else is kept but
// the footer's few hundred bytes per row group.

/** A row group ends at this many rows... */
const GROUP_ROWS = 65_536;
/** ...or once its values' JSON text passes this many characters: wide rows make short groups. */
const GROUP_CHARS = 8 * 2 ** 20;

export interface ParquetOptions {
  /** Each column's name: its id, or its data dictionary label. */
  names: string[];
  numeric: NumericMode;
}

/** Names as Parquet readers need them, unique: a repeated label gets its column's id after it. */
export function uniqueNames(columns: Column[], names: string[]): string[] {
  const seen = new Set<string>();
  return names.map((name, i) => {
    const unique = seen.has(name) ? `${name} (${columns[i]!.id})` : name;
    seen.add(unique);
    return unique;
  });
}

/**
 * An Apache Parquet file, written as pages arrive: `PAR1`, then row groups, then the footer. The
 * first page is a row group of its own, sent at once (its size tells how large the whole file will
 * be, as a first page of CSV does); later pages gather into groups of up to GROUP_ROWS rows.
 * Snappy-compressed, with each column's min/max statistics, so readers skip row groups by filter.
 *
 * A failure ends nothing: without its footer, the file is one no Parquet reader opens.
 */
export function parquetEncoder(columns: Column[], options: ParquetOptions): Encoder<string | Uint8Array> {
  const names = uniqueNames(columns, options.names);
  const mapped = columns.map((c, i) => parquetColumn(c, names[i]!, options.numeric));
  const writer = new ByteWriter();
  const parquet = new ParquetWriter({
    writer,
    schema: [{ name: "root", num_children: mapped.length }, ...mapped.map((m) => m.element)],
    createdBy: "datastore-export (hyparquet-writer)",
  });
  let values: (string | number | bigint | boolean | null)[][] = mapped.map(() => []);
  let rows = 0;
  let chars = 0;
  let firstSent = false;

  /** The bytes the writer holds since the last call, copied: its buffer is reused for the next group. */
  const taken = (): Uint8Array => {
    const bytes = writer.getBytes().slice();
    writer.index = 0;
    return bytes;
  };

  /**
   * JSON columns are written as the JSON logical type alone: with the JSON converted type, the writer
   * would parse and re-encode each value (changing CKAN's text: 20-digit integers, spaces, escapes).
   * The converted type, which readers such as DuckDB need to see JSON rather than bytes, goes into the
   * footer's schema only, after the last row group; their min/max statistics are left out (an order
   * of JSON text tells a reader nothing).
   */
  const json = mapped.map((m) => m.element.logical_type?.type === "JSON");
  const markJson = (): void => {
    for (const [i, m] of mapped.entries()) if (json[i]) m.element.converted_type = "JSON";
  };

  const flush = (): Uint8Array => {
    if (rows > 0) {
      const columnData = names.map((name, i) => ({ name, data: values[i]!, ...(json[i] ? { statistics: false } : {}) }));
      void parquet.write({ columnData, rowGroupSize: rows });
      values = mapped.map(() => []);
      rows = 0;
      chars = 0;
    }
    return taken();
  };

  return {
    begin: () => "",
    page(page: Row[]) {
      for (const row of page) {
        for (let i = 0; i < mapped.length; i++) {
          const raw = row[i];
          if (raw === undefined || raw === "null") {
            values[i]!.push(null);
          } else {
            values[i]!.push(mapped[i]!.value(raw));
            chars += raw.length;
          }
        }
        rows++;
      }
      if (!firstSent || rows >= GROUP_ROWS || chars >= GROUP_CHARS) {
        firstSent = true;
        return flush();
      }
      return "";
    },
    end() {
      // No row at all still makes a valid file: the header, no row group, the footer with the schema.
      const last = flush();
      markJson();
      void parquet.finish();
      const footer = taken();
      const out = new Uint8Array(last.byteLength + footer.byteLength);
      out.set(last);
      out.set(footer, last.byteLength);
      return out;
    },
    failure: () => "",
  };
}
