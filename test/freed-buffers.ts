import { vi } from "vitest";

/** ES2024's ArrayBuffer methods, which the project's TypeScript lib predates (as in rows/owned-bytes.ts). */
type Transferable = { transfer(length?: number): ArrayBuffer; readonly detached: boolean; readonly byteLength: number };

/**
 * What `run` gives, and the byte lengths of the buffers freed while it ran (rows/owned-bytes.ts's
 * `release` transfers a buffer to nothing): a buffer left to the collector instead is missing here.
 */
export async function freedWhile<T>(run: () => T | Promise<T>): Promise<{ result: T; freed: number[] }> {
  const freed: number[] = [];
  const prototype = ArrayBuffer.prototype as unknown as Transferable;
  const transfer = prototype.transfer;
  const spy = vi.spyOn(prototype, "transfer").mockImplementation(function (this: Transferable, length?: number) {
    if (length === 0 && !this.detached) freed.push(this.byteLength);
    return transfer.call(this, length);
  });
  try {
    return { result: await run(), freed };
  } finally {
    spy.mockRestore();
  }
}
