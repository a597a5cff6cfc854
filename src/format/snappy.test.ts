import fc from "fast-check";
import { snappyUncompress } from "hyparquet";
import { describe, expect, it } from "vitest";
import { maxCompressedLength, snappyCompress } from "./snappy.ts";

/** What a Snappy reader (hyparquet's) makes of a block, given the length it says. */
function uncompressed(block: Uint8Array, length: number): Uint8Array {
  const out = new Uint8Array(length);
  snappyUncompress(block, out);
  return out;
}

const utf8 = new TextEncoder();

describe("Snappy blocks for Parquet pages", () => {
  it("reads back as the bytes it was given, whatever they are", () => {
    // Repetitive bytes (few distinct values) make matches of every length and offset; random ones, literals.
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 3000 }),
      fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 200_000 }).map((a) => Uint8Array.from(a)),
    );
    fc.assert(
      fc.property(bytes, (input) => {
        const block = snappyCompress(input);
        expect(block.length).toBeLessThanOrEqual(maxCompressedLength(input.length));
        expect(uncompressed(block, input.length)).toEqual(input);
      }),
      { numRuns: 300 },
    );
  });

  it("shrinks a page of repeated text across 64 KiB fragments, and keeps an empty page empty", () => {
    const page = utf8.encode("2020-01-01T00:16:17,Kraków,gamma;".repeat(10_000));
    const block = snappyCompress(page);
    expect(block.length).toBeLessThan(page.length / 10);
    expect(uncompressed(block, page.length)).toEqual(page);
    expect(snappyCompress(new Uint8Array(0))).toEqual(Uint8Array.of(0));
  });
});
