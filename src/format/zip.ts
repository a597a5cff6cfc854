import { FormatSizeExceeded } from "../errors.ts";
import { concatBytes } from "../rows/bytes.ts";
/**
 * ZIP framing written as it streams (APPNOTE 6.3.x): each entry is a local header, its data and,
 * for an entry whose size is known only at its end, a data descriptor (flag bit 3); the central
 * directory and its end record close the archive. Cut off before that end, the file is not a ZIP
 * any reader accepts. No ZIP64: an entry or archive past 4 GiB throws instead of writing a wrong file.
 */

const CRC_TABLE = (() => {
  const table = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c;
  }
  return table;
})();

/** CRC-32 (ZIP's) of `bytes`, continuing from `crc` (0 to start). */
export function crc32(bytes: Uint8Array, crc = 0): number {
  let c = ~crc;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

/** 1980-01-01 00:00, DOS time: fixed, so the same export gives the same bytes (and ETag). */
const DOS_TIME = 0;
const DOS_DATE = (1 << 5) | 1;
const LIMIT = 0xffffffff;

/** The most one entry (and so an XLSX sheet's XML) may hold without ZIP64. */
export const ZIP_ENTRY_LIMIT = LIMIT;
/** What to do instead, said by every refusal at ZIP's limits: a FormatSizeExceeded, as no later try would fit (a snapshot stops for good). */
export const WAY_OUT = " Use a smaller limit, fewer fields, or CSV.";
const ARCHIVE_TOO_BIG = `The archive passed 4 GiB, the most a ZIP without ZIP64 holds.${WAY_OUT}`;

export const STORED = 0;
export const DEFLATED = 8;

interface Entry {
  name: Uint8Array;
  method: number;
  flags: number;
  crc: number;
  compressed: number;
  size: number;
  offset: number;
}

const utf8 = new TextEncoder();

function record(length: number, fill: (view: DataView) => void): Uint8Array {
  const bytes = new Uint8Array(length);
  fill(new DataView(bytes.buffer));
  return bytes;
}

/** The byte counts of one ZIP archive being written; each method returns the bytes to send next. */
export class ZipWriter {
  private readonly entries: Entry[] = [];
  private written = 0;

  private out(bytes: Uint8Array): Uint8Array {
    this.written += bytes.byteLength;
    if (this.written > LIMIT) throw new FormatSizeExceeded(ARCHIVE_TOO_BIG);
    return bytes;
  }

  private localHeader(entry: Entry): Uint8Array {
    const header = record(30 + entry.name.byteLength, (v) => {
      v.setUint32(0, 0x04034b50, true);
      v.setUint16(4, 20, true);
      v.setUint16(6, entry.flags, true);
      v.setUint16(8, entry.method, true);
      v.setUint16(10, DOS_TIME, true);
      v.setUint16(12, DOS_DATE, true);
      // With a data descriptor, CRC and sizes are zero here and follow the data.
      v.setUint32(14, entry.crc, true);
      v.setUint32(18, entry.compressed, true);
      v.setUint32(22, entry.size, true);
      v.setUint16(26, entry.name.byteLength, true);
    });
    header.set(entry.name, 30);
    return header;
  }

  /** A whole entry stored as it is: small parts whose bytes are known up front. */
  stored(name: string, data: Uint8Array): Uint8Array {
    const entry: Entry = {
      name: utf8.encode(name),
      method: STORED,
      flags: 0,
      crc: crc32(data),
      compressed: data.byteLength,
      size: data.byteLength,
      offset: this.written,
    };
    this.entries.push(entry);
    return this.out(concatBytes([this.localHeader(entry), data]));
  }

  /** The local header of an entry whose data follows in pieces; `finishEntry` ends it. */
  startEntry(name: string, method: number): Uint8Array {
    const entry: Entry = {
      name: utf8.encode(name),
      method,
      flags: 1 << 3,
      crc: 0,
      compressed: 0,
      size: 0,
      offset: this.written,
    };
    this.entries.push(entry);
    return this.out(this.localHeader(entry));
  }

  /** Counts data of the entry started last, as it goes out. */
  data(bytes: Uint8Array): Uint8Array {
    return this.out(bytes);
  }

  /** Counts data of the entry started last that an earlier invocation sent (a snapshot's earlier steps). */
  sent(length: number): void {
    this.written += length;
    if (this.written > LIMIT) throw new FormatSizeExceeded(ARCHIVE_TOO_BIG);
  }

  /** The data descriptor of the entry started last. */
  finishEntry(crc: number, compressed: number, size: number): Uint8Array {
    const entry = this.entries.at(-1)!;
    if (compressed > LIMIT || size > LIMIT)
      throw new FormatSizeExceeded(`ZIP entry ${new TextDecoder().decode(entry.name)} passed 4 GiB.${WAY_OUT}`);
    Object.assign(entry, { crc, compressed, size });
    return this.out(
      record(16, (v) => {
        v.setUint32(0, 0x08074b50, true);
        v.setUint32(4, crc, true);
        v.setUint32(8, compressed, true);
        v.setUint32(12, size, true);
      }),
    );
  }

  /** The central directory and its end record: the archive is complete. */
  close(): Uint8Array {
    const start = this.written;
    const parts = this.entries.map((e) => {
      const header = record(46 + e.name.byteLength, (v) => {
        v.setUint32(0, 0x02014b50, true);
        v.setUint16(4, 20, true);
        v.setUint16(6, 20, true);
        v.setUint16(8, e.flags, true);
        v.setUint16(10, e.method, true);
        v.setUint16(12, DOS_TIME, true);
        v.setUint16(14, DOS_DATE, true);
        v.setUint32(16, e.crc, true);
        v.setUint32(20, e.compressed, true);
        v.setUint32(24, e.size, true);
        v.setUint16(28, e.name.byteLength, true);
        v.setUint32(42, e.offset, true);
      });
      header.set(e.name, 46);
      return header;
    });
    const size = parts.reduce((n, p) => n + p.byteLength, 0);
    const end = record(22, (v) => {
      v.setUint32(0, 0x06054b50, true);
      v.setUint16(8, this.entries.length, true);
      v.setUint16(10, this.entries.length, true);
      v.setUint32(12, size, true);
      v.setUint32(16, start, true);
    });
    return this.out(concatBytes([...parts, end]));
  }
}
