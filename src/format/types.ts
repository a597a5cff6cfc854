import type { PassedBytes } from "../rows/batch.ts";
import type { Row } from "../rows/types.ts";

/**
 * One renderer per format. An instance writes one export: `begin` once, `page` per upstream page
 * (rows may be rewritten in place: the page is the encoder's to consume), `end` after the last page.
 * `failure` gives the text that makes a cut-off download visibly incomplete, or "" when stopping
 * already leaves the output invalid.
 *
 * `cutOff`, for a format whose failures otherwise leave a file no reader opens (XLSX), gives the end
 * of a whole file whose last row says the export stopped at a row limit, or undefined when it cannot
 * (any other failure, or no row left to say it in). The file then ends normally; the export still
 * counts as failed, so no cache or snapshot keeps it.
 *
 * Text formats give strings; a binary one (Parquet) gives bytes (`Chunk`), sent as they are.
 */
export interface Encoder<Chunk extends string | Uint8Array = string> {
  begin(): Chunk;
  page(rows: Row[]): Chunk;
  end(): Chunk;
  failure(reason: string): string;
  cutOff?(reason: string, rowLimit: boolean): string | undefined;
  /** Rows of a page copied as bytes past the encoder (xlsx-from-csv.ts): counted as if it had written them. */
  copied?(rows: number): void;
  /**
   * For an encoder whose pass-through pages are not yet its output (Parquet's cells,
   * parquet-from-csv.ts): such a page's bytes in, the encoder's bytes out. Without it, they go out as they are.
   */
  passed?(batch: PassedBytes): Chunk;
  /**
   * For an encoder that keeps state between pages (Parquet's row groups), a file that goes on in a
   * later invocation: what it holds written out without the file's end, and what that invocation's
   * encoder goes on from (Continued's `carried`), or for a format whose caller writes the end
   * (FormatEncoder.closing: Parquet) what the end needs of this invocation (its groups' entries).
   */
  pause?(): { chunk: Chunk; carried: EncoderCarry };
}

/** What an encoder hands to the one that goes on with its file: JSON, small (never the rows). */
export type EncoderCarry = { [key: string]: unknown };

/**
 * A file an earlier invocation began (a snapshot run's earlier steps): its start and `rows` rows are
 * written, and the encoder goes on as if it had written them itself.
 */
export interface Continued {
  rows: number;
  /** What the last invocation's encoder paused with, for an encoder that keeps state between pages. */
  carried?: EncoderCarry;
}
