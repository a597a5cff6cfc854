/**
 * Byte buffers the export allocates and frees itself. A page's bytes live outside V8's heap, and
 * garbage there waits for a collection that an export allocating little JavaScript seldom triggers:
 * without freeing, the isolate's ArrayBuffers grew with the rows (measured: 244 MB for 1,000,000
 * TSV rows, 55 MB for CSV, in a 128 MB isolate). A sink that knows a chunk has been written frees
 * it at once with `release`; only buffers marked here are ever freed, never one the runtime or a
 * library made (Node's zlib, for one, slices several chunks from one buffer).
 */
const owned = new WeakSet<ArrayBufferLike>();

/** Buffers made while a read whose result may be thrown away runs (see `freedIfThrown`). */
let made: ArrayBufferView[] | undefined;

/** A zeroed buffer this export owns (freed by `release`, or collected as usual). */
export function ownedBytes(length: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(length);
  owned.add(bytes.buffer);
  made?.push(bytes);
  return bytes;
}

/** Marks bytes nobody else holds a view of (a fresh TextEncoder result, an answer read whole, a page's row ends) as the export's. */
export function own<T extends ArrayBufferView>(bytes: T): T {
  owned.add(bytes.buffer);
  made?.push(bytes);
  return bytes;
}

/**
 * `read()`, and where it throws, every buffer the export made meanwhile freed: a read tried on a
 * guess (csv-records.ts) leaves its page's buffers behind when the guess was wrong, a page's worth
 * each time, for a collection that seldom comes.
 */
export function freedIfThrown<T>(read: () => T): T {
  const outer = made;
  made = [];
  try {
    const result = read();
    outer?.push(...made);
    return result;
  } catch (error) {
    for (const bytes of made) release(bytes);
    throw error;
  } finally {
    made = outer;
  }
}

/**
 * Marks a chunk the runtime made for this export (a compressor's output) as its own when the chunk
 * is the whole of its buffer: a view of part of a buffer may share it with other chunks (Node's
 * zlib slices several from one), and such a chunk is left to the collector.
 */
export function adopt<T extends Uint8Array>(bytes: T): T {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength) owned.add(bytes.buffer);
  return bytes;
}

type Transferable = ArrayBufferLike & { transfer?: (length: number) => ArrayBuffer; detached?: boolean };

/**
 * Frees the buffer under `bytes` now, if the export owns it: it is detached, so every view of it
 * reads as empty. Only for bytes nothing will read again (written by the runtime, copied elsewhere).
 */
export function release(bytes: ArrayBufferView): void {
  const buffer = bytes.buffer as Transferable;
  if (!owned.delete(buffer) || buffer.detached === true) return;
  buffer.transfer?.(0);
}

/**
 * Parts joined into bytes of the export's own (freed once sent or stored), each part freed once
 * copied: a sheet's deflated pieces, a Parquet page's row groups, garbage the collector would take
 * its time over (an export allocates little JavaScript, so V8 collects seldom).
 */
export function joinedOwned(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = ownedBytes(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
    release(part);
  }
  return out;
}
