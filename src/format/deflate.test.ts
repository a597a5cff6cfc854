import { describe, expect, it } from "vitest";
import { freedWhile } from "../../test/freed-buffers.ts";
import { BlockDeflater, DEFLATE_BLOCK, LEVEL } from "./deflate.ts";

describe("a deflate stream written in pieces", () => {
  it("frees each piece zlib gave once it is joined into the chunk it returns", async () => {
    // A sheet's pieces add up to its whole compressed size: left to the collector, they piled up
    // among the isolate's ArrayBuffers between its rare collections.
    const input = new TextEncoder().encode('<row><c t="n"><v>12345</v></c></row>'.repeat(DEFLATE_BLOCK / 16));
    const deflater = new BlockDeflater(LEVEL.fast);
    const { result: out, freed } = await freedWhile(() => deflater.write(input.subarray(0, DEFLATE_BLOCK)));
    // One block, one piece: the chunk returned is that piece's copy.
    expect(freed).toEqual([out.byteLength]);
    const end = deflater.end();
    const inflated = new Response(new Blob([out, end]).stream().pipeThrough(new DecompressionStream("deflate-raw")));
    expect(new Uint8Array(await inflated.arrayBuffer())).toEqual(input.subarray(0, DEFLATE_BLOCK));
  });
});
