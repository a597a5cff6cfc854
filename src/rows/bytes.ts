/** Chunks joined into one buffer (the one chunk itself when there is only one). */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  if (chunks.length === 1 && chunks[0]!.buffer instanceof ArrayBuffer) return chunks[0] as Uint8Array<ArrayBuffer>;
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}
