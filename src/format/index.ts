import type { Column } from "../rows/types.ts";
import type { CsvOptions, FormatName } from "../query/formats.ts";
import { csvEncoder, headerText } from "./csv.ts";
import { jsonEncoder, ndjsonEncoder } from "./json.ts";
import type { Encoder } from "./types.ts";
import { xlsxEncoder, xlsxPackage } from "./xlsx.ts";

/**
 * A file an earlier invocation began (a snapshot run's earlier steps): its start and `rows` rows are
 * written, and the encoder goes on as if it had written them itself.
 */
export interface Continued {
  rows: number;
}

export interface FormatEncoder {
  encoder(columns: Column[], csv: CsvOptions, continued?: Continued): Encoder;
  /** Whether `continued` works: all its state fits in `Continued` (XLSX's ZIP and deflate state does not). */
  resumable: boolean;
  /** A container the encoded bytes are streamed into (XLSX: the workbook's ZIP around its sheet). */
  package?: () => ReadableWritablePair<Uint8Array, Uint8Array>;
}

/** One renderer per format of query/formats.ts. */
export const ENCODERS: Record<FormatName, FormatEncoder> = {
  csv: { encoder: csvEncoder, resumable: true },
  tsv: { encoder: (columns, csv, continued) => csvEncoder(columns, { ...csv, delimiter: "\t" }, continued), resumable: true },
  json: { encoder: (columns, _csv, continued) => jsonEncoder(columns, continued), resumable: true },
  // One line per row, nothing before or after them: nothing to carry.
  ndjson: { encoder: ndjsonEncoder, resumable: true },
  xlsx: {
    resumable: false,
    encoder: (columns, csv) => xlsxEncoder(columns, { header: headerText(columns, csv.header === "label" ? "label" : "id") }),
    package: xlsxPackage,
  },
};
