import { describe, expect, it } from "vitest";
import { leadingRows } from "./batch.ts";

describe("cutting a page to the rows an export still needs", () => {
  it("cuts copied bytes after whole rows, where each row ends", () => {
    const bytes = new TextEncoder().encode('a,"line\r\nbreak"\r\nb,x\r\nc,plain\r\n');
    const ends = new Uint32Array([17, 22, 31]);
    const text = (batch: ReturnType<typeof leadingRows>) =>
      Array.isArray(batch) ? "" : new TextDecoder().decode(batch.bytes);
    expect(text(leadingRows({ bytes, rows: 3, ends }, 1))).toBe('a,"line\r\nbreak"\r\n');
    expect(text(leadingRows({ bytes, rows: 3, ends }, 2))).toBe('a,"line\r\nbreak"\r\nb,x\r\n');
    expect(leadingRows({ bytes, rows: 3, ends }, 2)).toMatchObject({ rows: 2, ends: new Uint32Array([17, 22]) });
    expect(text(leadingRows({ bytes, rows: 3, ends }, 0))).toBe("");
  });

  it("cuts rows", () => {
    expect(leadingRows([["1"], ["2"], ["3"]], 2)).toEqual([["1"], ["2"]]);
  });
});
