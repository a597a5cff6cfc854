import { RowLimitExceeded } from "../errors.ts";
import { ByteWriter } from "./byte-writer.ts";
import { cellKind, textCell, writeCell } from "./xlsx-cells.ts";
import { FIXED_PARTS, SHEET_END, SHEET_PATH, sheetStart, STYLE } from "./xlsx-parts.ts";
import type { Column, Row } from "../rows/types.ts";
import type { Continued, Encoder } from "./types.ts";
import { DeflatedZip, zipStream } from "./zip-stream.ts";
import { type DeflateState, LEVEL } from "./deflate.ts";

const bytesOf = (text: string): Uint8Array => new TextEncoder().encode(text);
// Data rows say no number (`r` is optional, ECMA-376 18.3.1.73): each follows the one before, as
// Excel, LibreOffice and Google Sheets read it. Rows copied from CKAN's pages as bytes (xlsx-from-csv.ts)
// cannot know theirs: pages are read as they arrive, several at once.
const ROW_OPEN = bytesOf("<row>");
const ROW_CLOSE = bytesOf("</row>");
const utf8 = new TextDecoder();

/** Rows an Excel sheet holds, the header row included. */
export const SHEET_ROWS = 1_048_576;

/** Column widths, in characters: from the header and the first page, within reason. */
const MIN_WIDTH = 6;
const MAX_WIDTH = 60;

export interface XlsxOptions {
  /** The header row's text per column (ids, or the data dictionary's labels). */
  header: string[];
}

/**
 * The sheet of an Excel workbook (.xlsx), written as rows come: typed cells (see xlsx-cells.ts),
 * text as inline strings (no shared-strings table to hold until the end), a bold header row frozen
 * above the data, and column widths from the header and the first page. `xlsxPackage` wraps the
 * sheet's bytes into the workbook.
 *
 * A failure writes nothing more: the package is then left without its end (a broken ZIP), which
 * Excel refuses. Only a row limit found while paging (CKAN's count was short) ends the sheet whole,
 * its last row the incomplete-export marker, as CSV's last line is.
 */
export function xlsxEncoder(
  columns: Column[],
  options: XlsxOptions,
  continued?: Continued,
): Omit<Encoder<string | Uint8Array>, "begin" | "end"> & { begin(): string; end(): string } {
  const kinds = columns.map((c) => cellKind(c.type));
  // Row 1 is the header; a sheet an earlier invocation began has its start and widths written.
  let rowNumber = 1 + (continued?.rows ?? 0);
  let started = continued !== undefined;

  // Rows are written as bytes into one reused buffer: a page built as strings cost most of an
  // export's CPU in garbage collection and the final UTF-8 pass (measured with bench:profile).
  const out = new ByteWriter();
  const pageXml = (rows: Row[]): Uint8Array<ArrayBuffer> => {
    const widths = options.header.map((h) => h.length);
    for (const row of rows) {
      if (rowNumber >= SHEET_ROWS)
        throw new RowLimitExceeded(
          `An Excel sheet holds ${SHEET_ROWS} rows; this export has more. Export it as CSV, or add a limit.`,
        );
      rowNumber++;
      out.bytes(ROW_OPEN);
      for (let i = 0; i < kinds.length; i++) {
        const width = writeCell(out, row[i], kinds[i]!);
        if (!started && width > widths[i]!) widths[i] = width;
      }
      out.bytes(ROW_CLOSE);
    }
    if (started) return out.take();
    started = true;
    const written = out.take();
    const header = `<row r="1">${options.header.map((h) => textCell(h, STYLE.header)).join("")}</row>`;
    out.text(
      sheetStart(
        widths.map((w) => Math.min(MAX_WIDTH, Math.max(MIN_WIDTH, w + 2))),
        true,
      ) + header,
    );
    out.bytes(written);
    return out.take();
  };
  const firstPageText = (): string => (started ? "" : utf8.decode(pageXml([])));

  const end = (): string => firstPageText() + SHEET_END;
  return {
    begin: () => "",
    page: pageXml,
    end,
    failure: () => "",
    // Rows copied as bytes are rows of the sheet all the same: the limit and the marker's place count them.
    copied: (rows) => void (rowNumber += rows),
    cutOff: (reason, rowLimit) => {
      // A full sheet has no row left for the marker: the workbook is then left broken instead.
      if (!rowLimit || rowNumber >= SHEET_ROWS) return undefined;
      const marker = `<row>${textCell(`#EXPORT INCOMPLETE: ${reason} The rows above are only part of the export.`, STYLE.header)}</row>`;
      return firstPageText() + marker + SHEET_END;
    },
  };
}

/** The workbook around the sheet's bytes: a ZIP streamed as the sheet is written. */
export const xlsxPackage = (): ReadableWritablePair<Uint8Array, Uint8Array> =>
  zipStream(FIXED_PARTS, SHEET_PATH, LEVEL.fast);

/** The same workbook made in pieces, from the deflater's state an earlier invocation left (a snapshot's write steps). */
export const xlsxZip = (from?: DeflateState): DeflatedZip => new DeflatedZip(FIXED_PARTS, SHEET_PATH, LEVEL.fast, from);
