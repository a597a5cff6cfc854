import type { Column } from "../rows/types.ts";
import type { FormatName, FormatOptions, Output } from "../query/formats.ts";
import { csvEncoder, headerText } from "./csv.ts";
import { jsonEncoder, ndjsonEncoder } from "./json.ts";
import { parquetEncoder } from "./parquet.ts";
import type { DeflateState } from "./deflate.ts";
import type { Continued, Encoder } from "./types.ts";
import type { DeflatedZip } from "./zip-stream.ts";
import { xlsxEncoder, xlsxPackage, xlsxZip } from "./xlsx.ts";
import { ZIP_ENTRY_LIMIT } from "./zip.ts";

export interface FormatEncoder<Options> {
  encoder(columns: Column[], options: Options, continued?: Continued): Encoder<string | Uint8Array>;
  /** Whether `continued` works: all its state fits in `Continued` (XLSX's ZIP is its package's; Parquet's row groups are carried). */
  resumable: boolean;
  /** A container the encoded bytes are streamed into (XLSX: the workbook's ZIP around its sheet). */
  package?: () => ReadableWritablePair<Uint8Array, Uint8Array>;
  /** The same container made in pieces, for a file written in steps (a snapshot's): each step's from the deflater's state the last left. */
  steppedPackage?: (from?: DeflateState) => DeflatedZip;
  /** The most encoded bytes the format holds, and what a file past it would be told. */
  maxBytes?: { limit: number; refusal: (estimate: number) => string };
}

/** One renderer per format of query/formats.ts, each taking that format's own options. */
export const ENCODERS: { [F in FormatName]: FormatEncoder<FormatOptions[F]> } = {
  // TSV's options carry the tab as their delimiter.
  csv: { encoder: csvEncoder, resumable: true },
  tsv: { encoder: csvEncoder, resumable: true },
  json: { encoder: (columns, _options, continued) => jsonEncoder(columns, continued), resumable: true },
  // One line per row, nothing before or after them: nothing to carry.
  ndjson: { encoder: (columns) => ndjsonEncoder(columns), resumable: true },
  xlsx: {
    resumable: true,
    encoder: (columns, options, continued) =>
      xlsxEncoder(columns, { header: headerText(columns, options.header) }, continued),
    package: xlsxPackage,
    steppedPackage: xlsxZip,
    maxBytes: {
      limit: ZIP_ENTRY_LIMIT,
      refusal: (estimate) =>
        `This workbook's sheet would be about ${Math.max(4, Math.round(estimate / 2 ** 30))} GiB, more than the 4 GiB one XLSX sheet holds. Use a smaller limit, fewer fields, or CSV.`,
    },
  },
  parquet: {
    // Its row groups' footer entries are carried (Encoder.pause).
    resumable: true,
    encoder: (columns, options, continued) =>
      parquetEncoder(columns, { names: headerText(columns, options.header), numeric: options.numeric }, continued),
  },
};

/** An encoder for the export's format, given that format's own options. */
export function encoderFor(output: Output, columns: Column[], continued?: Continued): Encoder<string | Uint8Array> {
  // The format names both the entry and its options' type: one pair, looked up together.
  const entry = ENCODERS[output.format] as FormatEncoder<Output["options"]>;
  return entry.encoder(columns, output.options, continued);
}
