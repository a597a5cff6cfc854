import { ByteWriter, type SchemaElement } from "hyparquet-writer";
import { FormatSizeExceeded } from "../errors.ts";
import type { NumericMode } from "../query/formats.ts";
import type { PassedBytes } from "../rows/batch.ts";
import { concatBytes } from "../rows/bytes.ts";
import { joinedOwned, own } from "../rows/owned-bytes.ts";
import type { Column, Row } from "../rows/types.ts";
import { parquetColumn } from "./parquet-columns.ts";
import { type ParquetCarry, packGroup, parquetFooter } from "./parquet-footer.ts";
import type { ColumnValues } from "./parquet-chunk.ts";
import { cellsOf } from "./parquet-from-csv.ts";
import { columnValues } from "./parquet-values.ts";
import type { Continued, Encoder, EncoderCarry } from "./types.ts";

// Written by our own column writer (parquet-values.ts, parquet-chunk.ts: typed buffers filled
// straight from CKAN's text, one data page per column chunk, Snappy by snappy.ts), with
// hyparquet-writer's page header and footer writers (parquet-footer.ts). Row groups go out as they
// are written; of each, only the footer's entries are kept, a few hundred bytes. hyparquet-writer's
// own column writer, which keeps a value object per cell and encodes each value's text again, cost
// three to four times the CPU (0.93 s against 0.25-0.29 s for 200,000 bench rows in Node).

/**
 * A row group ends at this many rows, or once its values' JSON text passes GROUP_CHARS characters
 * (wide rows make short groups): its buffers stay near 16 MiB of ArrayBuffers for the bench table
 * (bench:memory), and its footer entry is about 600 bytes of JSON (50-60 a column) kept till the file's end.
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
function layout(columns: Column[], options: ParquetOptions) {
  const names = uniqueNames(columns, options.names);
  const mapped = columns.map((c, i) => parquetColumn(c, names[i]!, options.numeric));
  const schema: SchemaElement[] = [{ name: "root", num_children: mapped.length }, ...mapped.map((m) => m.element)];
  return { schema, values: (): ColumnValues[] => mapped.map(columnValues) };
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
    /**
     * A page's rows in, a slice at a time, and the row groups they fill: a large page makes several,
     * so a group's buffers stay within GROUP_ROWS rows, or GROUP_CHARS and a slice. `add` takes rows
     * [from, to) of the page: its rows, or its cells (parquet-from-csv.ts).
     */
    take(count: number, add: (from: number, to: number) => void): Uint8Array[] {
      const written: Uint8Array[] = [];
      for (let from = 0; from < count; ) {
        const to = Math.min(count, from + SLICE_ROWS, from + GROUP_ROWS - rows);
        add(from, to);
        rows += to - from;
        from = to;
        if (rows >= GROUP_ROWS || chars >= GROUP_CHARS) written.push(this.flush());
      }
      return written;
    },
    fromRows(page: Row[]): Uint8Array[] {
      return this.take(page.length, (from, to) => {
        const slice = from === 0 && to === page.length ? page : page.slice(from, to);
        // Column by column: each column's loop calls its converter at one place, many times over.
        for (let i = 0; i < values.length; i++) chars += values[i]!.add(slice, i);
      });
    },
    fromCells(batch: PassedBytes): Uint8Array[] {
      let next = 0;
      return this.take(batch.rows, (from, to) => {
        const cells = cellsOf(batch.bytes, next, to - from, values.length);
        next = cells.end;
        for (let i = 0; i < values.length; i++) chars += values[i]!.addCells(cells, i, 0, to - from);
      });
    },
    /** The rows so far as a row group (nothing if none). */
    flush(): Uint8Array {
      if (rows === 0) return new Uint8Array(0);
      writer.index = 0;
      const chunks = values.map((v) => v.flush(writer));
      carry.groups.push(packGroup({ rows, chunks }));
      // The export's own: freed once sent (with little JavaScript garbage, V8 collects seldom).
      const bytes = own(writer.getBytes().slice());
      rows = 0;
      chars = 0;
      return bytes;
    },
  };
}

/** A page's row groups as one chunk: the one group as it is (the export's own already), or joined. */
const groupsOut = (groups: Uint8Array[]): Uint8Array => (groups.length === 1 ? groups[0]! : joinedOwned(groups));

/**
 * The most footer entries (their JSON, about 50-60 bytes a column chunk) a file written in parts may
 * gather: its last part holds them all at once to write the footer, with the export's own buffers.
 * Measured in Node (bench/footer-memory.ts): 8 MiB of entries, 142,000 column chunks (11,800 groups
 * of 12 columns, about 190 million rows of the bench table; about 45 million with 50 columns), make a
 * 9.8 MiB footer (72 bytes a column chunk) in 1.5 s of CPU, and fit a 48 MB heap cap (4.8 s of CPU
 * there, collecting; 16 MiB do not fit).
 */
export const MAX_FOOTER_ENTRIES = 8 * 2 ** 20;

/** A file written in parts refused once its row groups' entries pass MAX_FOOTER_ENTRIES: no later try would fit. */
export function footerEntriesRefusal(bytes: number): FormatSizeExceeded | undefined {
  if (bytes <= MAX_FOOTER_ENTRIES) return undefined;
  return new FormatSizeExceeded(
    `This Parquet file's row groups so far need ${Math.round(bytes / 2 ** 20)} MiB of footer entries, more than the ${MAX_FOOTER_ENTRIES / 2 ** 20} MiB its last step can hold to write the footer. Snapshot it as CSV, or with a smaller limit or fewer fields.`,
  );
}

/**
 * The end of a file written in parts (each paused, see parquetEncoder): the footer, from every
 * part's entries in order. The only step whose memory grows with the file's row groups.
 */
export function parquetEnd(columns: Column[], options: ParquetOptions, paused: EncoderCarry[]): Uint8Array {
  const groups = paused.flatMap((p) => (p as ParquetCarry).groups);
  return parquetFooter(layout(columns, options).schema, groups, CREATED_BY);
}

/**
 * An Apache Parquet file, written as pages arrive: `PAR1`, then row groups, then the footer. The
 * first page is a row group of its own, sent at once (its size tells how large the whole file will
 * be, as a first page of CSV does); later pages gather into groups of up to GROUP_ROWS rows.
 * Snappy-compressed, with each column's min/max statistics, so readers skip row groups by filter.
 *
 * A file written in parts (a snapshot's steps) pauses each part: its rows so far as a row group, and
 * the footer entries of the groups this part wrote, only those (its state does not grow with the
 * file); `continued` goes on with it, and parquetEnd writes its footer from every part's entries.
 *
 * A failure ends nothing: without its footer, the file is one no Parquet reader opens.
 */
export function parquetEncoder(columns: Column[], options: ParquetOptions, continued?: Continued): ParquetEncoder {
  const { schema, values } = layout(columns, options);
  const carry: ParquetCarry = { groups: [] };
  const groups = rowGroups(values(), carry);
  let firstSent = continued !== undefined;
  return {
    begin: () => (continued === undefined ? PAR1.slice() : ""),
    page(page: Row[]) {
      const written = groups.fromRows(page);
      if (!firstSent) written.push(groups.flush());
      firstSent = true;
      return written.length === 0 ? "" : groupsOut(written);
    },
    passed(batch: PassedBytes) {
      const written = groups.fromCells(batch);
      if (!firstSent) written.push(groups.flush());
      firstSent = true;
      return written.length === 0 ? new Uint8Array(0) : groupsOut(written);
    },
    // No row at all still makes a valid file: the header, no row group, the footer with the schema.
    end() {
      if (continued !== undefined) throw new Error("a Parquet file written in parts ends with parquetEnd");
      return concatBytes([groups.flush(), parquetFooter(schema, carry.groups, CREATED_BY)]);
    },
    failure: () => "",
    pause: () => ({ chunk: groups.flush(), carried: { groups: carry.groups.splice(0) } }),
  };
}
