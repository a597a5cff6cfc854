// A small, strict reader of the workbooks the worker writes, for specs: it walks the ZIP by its
// central directory (so a cut-off file fails), inflates each part, checks its CRC-32 and size, and
// reads the sheet's cells with their types. Written here rather than taken from a library so that
// every byte it accepts is checked against the ZIP and SpreadsheetML rules the encoder follows.
import { crc32 } from "../src/format/zip.ts";

export interface Cell {
  /** "n" number, "b" boolean, "inlineStr" text ("s" a shared string, from other writers), "" an empty cell. */
  type: string;
  /** The `<v>` text, or the inline string unescaped. */
  value: string;
  style: number;
}

export interface Workbook {
  parts: Map<string, string>;
  /** Rows in order, each the cells in column order. */
  rows: Cell[][];
  /** The sheet's `<row r>` numbers, to check they run 1, 2, 3, ... */
  rowNumbers: number[];
}

async function inflate(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes.slice()]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** The parts of a ZIP by name; throws when it has no end record or a part fails its CRC. */
export async function unzip(zip: Uint8Array): Promise<Map<string, Uint8Array>> {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const end = zip.byteLength - 22;
  if (end < 0 || view.getUint32(end, true) !== 0x06054b50)
    throw new Error("not a complete ZIP: no end of central directory record");
  const count = view.getUint16(end + 10, true);
  let at = view.getUint32(end + 16, true);
  const parts = new Map<string, Uint8Array>();
  for (let i = 0; i < count; i++) {
    if (view.getUint32(at, true) !== 0x02014b50) throw new Error(`bad central directory entry ${i}`);
    const [method, crc, compressed, size] = [
      view.getUint16(at + 10, true),
      view.getUint32(at + 16, true),
      view.getUint32(at + 20, true),
      view.getUint32(at + 24, true),
    ];
    const nameLength = view.getUint16(at + 28, true);
    const extra = view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
    const offset = view.getUint32(at + 42, true);
    const name = new TextDecoder().decode(zip.subarray(at + 46, at + 46 + nameLength));
    if (view.getUint32(offset, true) !== 0x04034b50) throw new Error(`bad local header of ${name}`);
    const dataStart = offset + 30 + view.getUint16(offset + 26, true) + view.getUint16(offset + 28, true);
    const raw = zip.subarray(dataStart, dataStart + compressed);
    const data = method === 0 ? raw : await inflate(raw);
    if (data.byteLength !== size || crc32(data) !== crc) throw new Error(`${name}: size or CRC-32 does not match`);
    parts.set(name, data);
    at += 46 + nameLength + extra;
  }
  return parts;
}

const unescapeXml = (text: string): string =>
  text
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)))
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/_x([0-9A-F]{4})_/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    .replace(/&amp;/g, "&");

/** Reads the workbook: every part as text, and the sheet's cells. */
export async function readWorkbook(bytes: Uint8Array): Promise<Workbook> {
  const parts = new Map(
    [...(await unzip(bytes))].map(([name, data]) => [
      name,
      new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(data),
    ]),
  );
  const sheet = parts.get("xl/worksheets/sheet1.xml");
  if (sheet === undefined) throw new Error("no sheet");
  if (/<f[ >]/.test(sheet)) throw new Error("the sheet holds a formula");
  const rows: Cell[][] = [];
  const rowNumbers: number[] = [];
  // A row without its number (`r` is optional) follows the one before.
  for (const [, r, body] of sheet.matchAll(/<row(?: r="(\d+)")?[^>]*>(.*?)<\/row>/gs)) {
    rowNumbers.push(r === undefined ? (rowNumbers.at(-1) ?? 0) + 1 : Number(r));
    const cells: Cell[] = [];
    for (const [, attributes = "", content = ""] of (body ?? "").matchAll(
      /<c((?: [a-zA-Z]+="[^"]*")*)(?:\/>|>(.*?)<\/c>)/gs,
    )) {
      const type = /t="([^"]+)"/.exec(attributes)?.[1] ?? (content === "" ? "" : "n");
      const style = Number(/s="(\d+)"/.exec(attributes)?.[1] ?? 0);
      const value =
        type === "inlineStr"
          ? unescapeXml(/<t[^>]*>(.*?)<\/t>/s.exec(content)?.[1] ?? "")
          : (/<v>(.*?)<\/v>/.exec(content)?.[1] ?? "");
      // Other writers (LibreOffice) leave empty cells out and say where each cell is.
      const column = /r="([A-Z]+)\d+"/.exec(attributes)?.[1];
      if (column !== undefined) {
        const index = [...column].reduce((n, letter) => n * 26 + letter.charCodeAt(0) - 64, 0) - 1;
        while (cells.length < index) cells.push({ type: "", value: "", style: 0 });
      }
      cells.push({ type, value, style });
    }
    rows.push(cells);
  }
  return { parts, rows, rowNumbers };
}
