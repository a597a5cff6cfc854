import { HttpError } from "../errors.ts";
import { cellKind, cellXml, textCell } from "./xlsx-cells.ts";
import { FIXED_PARTS, SHEET_END, SHEET_PATH, sheetStart, STYLE } from "./xlsx-parts.ts";
import type { Column, Row } from "../rows/types.ts";
import type { Encoder } from "./types.ts";
import { zipStream } from "./zip-stream.ts";

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
export function xlsxEncoder(columns: Column[], options: XlsxOptions): Encoder {
  const kinds = columns.map((c) => cellKind(c.type));
  // Row 1 is the header.
  let rowNumber = 1;
  let started = false;

  const pageXml = (rows: Row[]): string => {
    const widths = options.header.map((h) => h.length);
    let out = "";
    for (const row of rows) {
      if (rowNumber >= SHEET_ROWS) throw new HttpError(400, `An Excel sheet holds ${SHEET_ROWS} rows; this export has more. Export it as CSV, or add a limit.`, { parameter: "limit" });
      let cells = "";
      for (let i = 0; i < kinds.length; i++) {
        const [xml, width] = cellXml(row[i], kinds[i]!);
        cells += xml;
        if (!started && width > widths[i]!) widths[i] = width;
      }
      out += `<row r="${++rowNumber}">${cells}</row>`;
    }
    if (started) return out;
    started = true;
    const header = `<row r="1">${options.header.map((h) => textCell(h, STYLE.header)).join("")}</row>`;
    return sheetStart(widths.map((w) => Math.min(MAX_WIDTH, Math.max(MIN_WIDTH, w + 2))), true) + header + out;
  };

  const end = (): string => (started ? "" : pageXml([])) + SHEET_END;
  return {
    begin: () => "",
    page: pageXml,
    end,
    failure: () => "",
    cutOff: (reason, rowLimit) => {
      // A full sheet has no row left for the marker: the workbook is then left broken instead.
      if (!rowLimit || rowNumber >= SHEET_ROWS) return undefined;
      const marker = `<row r="${rowNumber + 1}">${textCell(`#EXPORT INCOMPLETE: ${reason} The rows above are only part of the export.`, STYLE.header)}</row>`;
      return (started ? "" : pageXml([])) + marker + SHEET_END;
    },
  };
}

/** The workbook around the sheet's bytes: a ZIP streamed as the sheet is written. */
export const xlsxPackage = (): ReadableWritablePair<Uint8Array, Uint8Array> => zipStream(FIXED_PARTS, SHEET_PATH);
