// Serialised rows, kept so that serving a page costs the bench upstream next to no CPU: per table
// shape, records format and column list, rows are serialised once in chunks of 10,000, and a page in
// `_id` order is a list of slices of those chunks. What is serialised while measuring is counted.
import { copyLine, type Cells, type TableShape } from "./tables.ts";

export type RecordsFormat = "lists" | "objects" | "csv";
/** The records formats, plus "dump": COPY text as the dump streams it (not inside a JSON string). */
export type Encoding = RecordsFormat | "dump";

const CHUNK_ROWS = 10_000;

interface Chunk {
  bytes: Buffer;
  /** Where each row starts in `bytes`, and where the last ends. */
  starts: Uint32Array;
}

/** One row's text; lists and objects rows carry the comma that separates them from the next. */
export function rowText(shape: TableShape, encoding: Encoding, columns: readonly number[], cells: Cells): string {
  switch (encoding) {
    case "lists":
      return `[${columns.map((i) => cells.json[i]).join(",")}],`;
    case "objects":
      return `{${columns.map((i) => `${JSON.stringify(shape.fields[i]!.id)}:${cells.json[i]}`).join(",")}},`;
    case "csv":
      return JSON.stringify(copyLine(columns.map((i) => cells.copy[i]!))).slice(1, -1);
    case "dump":
      return copyLine(columns.map((i) => cells.copy[i]!));
  }
}

// Shapes of one table mostly differ only by where `_id` sits (the worker asks for the columns without
// it, or with it last for keyset paging; the dump has it first), so rows are built from a "core" text
// of the other columns, computed once per row and shared, with `_id` added at either end.

interface CoreSpec {
  kind: "lists" | "objects" | "copy" | "csv";
  columns: number[];
  /** For "csv": the index of the "copy" core it escapes. */
  from?: number;
}

function coreText(shape: TableShape, spec: CoreSpec, cells: Cells, done: string[]): string {
  switch (spec.kind) {
    case "lists":
      return `[${spec.columns.map((i) => cells.json[i]).join(",")}]`;
    case "objects":
      return `{${spec.columns.map((i) => `${JSON.stringify(shape.fields[i]!.id)}:${cells.json[i]}`).join(",")}}`;
    case "copy":
      return copyLine(spec.columns.map((i) => cells.copy[i]!));
    case "csv":
      return JSON.stringify(done[spec.from!]).slice(1, -1);
  }
}

type RowBuilder = (cells: Cells, cores: string[]) => string;

function planRows(
  shape: TableShape,
  wanted: { encoding: Encoding; columns: readonly number[] }[],
): { cores: CoreSpec[]; rows: RowBuilder[] } {
  const cores: CoreSpec[] = [];
  const core = (kind: CoreSpec["kind"], columns: number[]): number => {
    const found = cores.findIndex((c) => c.kind === kind && c.columns.join() === columns.join());
    if (found >= 0) return found;
    const from = kind === "csv" ? core("copy", columns) : undefined;
    cores.push(from === undefined ? { kind, columns } : { kind, columns, from });
    return cores.length - 1;
  };
  const idIsFirst = shape.fields[0]?.id === "_id";
  const rows = wanted.map(({ encoding, columns }): RowBuilder => {
    const rest = columns.filter((i) => i !== 0);
    const at = columns.indexOf(0);
    const where = at < 0 ? "none" : at === 0 ? "first" : at === columns.length - 1 ? "last" : "middle";
    if (!idIsFirst || rest.length === 0 || where === "middle")
      return (cells) => rowText(shape, encoding, columns, cells);
    const k = core(encoding === "dump" ? "copy" : encoding, rest);
    const id = (cells: Cells): string => cells.copy[0]!;
    switch (encoding) {
      case "lists":
        if (where === "none") return (_, c) => `${c[k]},`;
        return where === "first"
          ? (cells, c) => `[${id(cells)},${c[k]!.slice(1)},`
          : (cells, c) => `${c[k]!.slice(0, -1)},${id(cells)}],`;
      case "objects":
        if (where === "none") return (_, c) => `${c[k]},`;
        return where === "first"
          ? (cells, c) => `{"_id":${id(cells)},${c[k]!.slice(1)},`
          : (cells, c) => `${c[k]!.slice(0, -1)},"_id":${id(cells)}},`;
      case "dump":
        if (where === "none") return (_, c) => c[k]!;
        return where === "first"
          ? (cells, c) => `${id(cells)},${c[k]}`
          : (cells, c) => `${c[k]!.slice(0, -1)},${id(cells)}\n`;
      case "csv":
        // The escaped line ends in the two characters \ and n.
        if (where === "none") return (_, c) => c[k]!;
        return where === "first"
          ? (cells, c) => `${id(cells)},${c[k]}`
          : (cells, c) => `${c[k]!.slice(0, -2)},${id(cells)}\\n`;
    }
  });
  return { cores, rows };
}

/** Bytes to drop after a page's last row: the comma between lists or objects rows. */
export const trailing = (encoding: Encoding): number => (encoding === "lists" || encoding === "objects" ? 1 : 0);

export class RowStore {
  /** Chunks serialised since the last reset: while measuring this should stay 0. */
  generated = 0;
  /**
   * Chunks kept per shape, the oldest dropped first; unbounded by default. A table too large to hold
   * serialised (20,000,000 rows are gigabytes) is read front to back, so a window of chunks serves it.
   */
  readonly #keep: number;

  constructor(options: { keepChunks?: number } = {}) {
    this.#keep = options.keepChunks ?? Number.POSITIVE_INFINITY;
  }

  readonly #chunks = new Map<string, Map<number, Chunk>>();
  /** Every (shape, encoding, columns) asked for, so `prepareSeen` can fill them ahead of measuring. */
  readonly #seen = new Map<string, { shape: TableShape; encoding: Encoding; columns: number[]; rows: number }>();

  #chunksOf(shape: TableShape, encoding: Encoding, columns: readonly number[]): Map<number, Chunk> {
    const key = `${shape.name}|${encoding}|${columns.join(",")}`;
    let chunks = this.#chunks.get(key);
    if (chunks === undefined) this.#chunks.set(key, (chunks = new Map()));
    return chunks;
  }

  /** Serialises chunk `index` of several shapes of one table, computing each row's cells once. */
  #generate(
    shape: TableShape,
    wanted: { encoding: Encoding; columns: readonly number[]; chunks: Map<number, Chunk> }[],
    index: number,
  ): void {
    this.generated += wanted.length;
    const plan = planRows(shape, wanted);
    const texts = wanted.map(() => "");
    const starts = wanted.map(() => new Uint32Array(CHUNK_ROWS + 1));
    const at = wanted.map(() => 0);
    const cores: string[] = new Array(plan.cores.length);
    for (let n = 0; n < CHUNK_ROWS; n++) {
      const cells = shape.cells(index * CHUNK_ROWS + n + 1);
      for (let k = 0; k < plan.cores.length; k++) cores[k] = coreText(shape, plan.cores[k]!, cells, cores);
      for (let w = 0; w < wanted.length; w++) {
        const row = plan.rows[w]!(cells, cores);
        starts[w]![n] = at[w]!;
        at[w]! += Buffer.byteLength(row);
        texts[w] += row;
      }
    }
    wanted.forEach((w, i) => {
      starts[i]![CHUNK_ROWS] = at[i]!;
      w.chunks.set(index, { bytes: Buffer.from(texts[i]!), starts: starts[i]! });
    });
  }

  #chunk(shape: TableShape, encoding: Encoding, columns: readonly number[], index: number): Chunk {
    const chunks = this.#chunksOf(shape, encoding, columns);
    if (!chunks.has(index)) {
      this.#generate(shape, [{ encoding, columns, chunks }], index);
      // A Map iterates in insertion order: the first key is the oldest chunk.
      while (chunks.size > this.#keep) chunks.delete(chunks.keys().next().value!);
    }
    return chunks.get(index)!;
  }

  /** Notes a shape for `prepareSeen`, to be serialised for the table's first `rows` rows. */
  want(shape: TableShape, encoding: Encoding, columns: readonly number[], rows: number): void {
    const key = `${shape.name}|${encoding}|${columns.join(",")}`;
    const seen = this.#seen.get(key);
    if (seen === undefined) this.#seen.set(key, { shape, encoding, columns: [...columns], rows });
    else seen.rows = Math.max(seen.rows, rows);
  }

  /** Rows `first`..`end - 1` (1-based `_id`s, ascending) as slices of serialised chunks, separators trimmed. */
  slice(
    shape: TableShape,
    encoding: Encoding,
    columns: readonly number[],
    first: number,
    end: number,
    rows: number,
  ): Buffer[] {
    // A shape only ever asked from the table's start (the first page of an export) is prepared that
    // far; one asked further on (later pages), to the end of the table.
    this.want(shape, encoding, columns, first > 1 ? rows : Math.min(rows, end - 1));
    const parts: Buffer[] = [];
    for (let id = first; id < end; ) {
      const index = Math.floor((id - 1) / CHUNK_ROWS);
      const chunk = this.#chunk(shape, encoding, columns, index);
      const from = id - 1 - index * CHUNK_ROWS;
      const to = Math.min(end - 1 - index * CHUNK_ROWS, CHUNK_ROWS);
      parts.push(chunk.bytes.subarray(chunk.starts[from], chunk.starts[to]));
      id += to - from;
    }
    const cut = trailing(encoding);
    const last = parts.at(-1);
    if (cut > 0 && last !== undefined) parts[parts.length - 1] = last.subarray(0, last.length - cut);
    return parts;
  }

  /** Rows `end - 1` down to `first` (descending `_id`), as one buffer without the last separator. */
  sliceDescending(
    shape: TableShape,
    encoding: Encoding,
    columns: readonly number[],
    first: number,
    end: number,
    rows: number,
  ): Buffer[] {
    this.want(shape, encoding, columns, rows);
    const parts: Buffer[] = [];
    for (let id = end - 1; id >= first; id--) {
      const index = Math.floor((id - 1) / CHUNK_ROWS);
      const chunk = this.#chunk(shape, encoding, columns, index);
      const from = id - 1 - index * CHUNK_ROWS;
      parts.push(chunk.bytes.subarray(chunk.starts[from], chunk.starts[from + 1]));
    }
    const all = Buffer.concat(parts);
    return [all.subarray(0, all.length - trailing(encoding))];
  }

  /** Serialises, ahead of measuring, every chunk of every shape asked for so far. */
  prepareSeen(): number {
    const before = this.generated;
    const byTable = new Map<
      TableShape,
      { encoding: Encoding; columns: readonly number[]; rows: number; chunks: Map<number, Chunk> }[]
    >();
    for (const { shape, encoding, columns, rows } of this.#seen.values()) {
      const list = byTable.get(shape) ?? [];
      list.push({ encoding, columns, rows, chunks: this.#chunksOf(shape, encoding, columns) });
      byTable.set(shape, list);
    }
    for (const [shape, list] of byTable) {
      const rows = Math.max(...list.map((w) => w.rows));
      for (let index = 0; index * CHUNK_ROWS < rows; index++) {
        const wanted = list.filter((w) => index * CHUNK_ROWS < w.rows && !w.chunks.has(index));
        if (wanted.length > 0) this.#generate(shape, wanted, index);
      }
    }
    return this.generated - before;
  }
}
