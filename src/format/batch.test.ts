import { describe, expect, it } from "vitest";
import { leadingRows } from "./batch.ts";

describe("cutting a page to the rows an export still needs", () => {
  it("cuts CSV text after whole rows, quoted line breaks and escaped quotes included", () => {
    const text = 'a,"line\r\nbreak"\r\nb,"say ""hi""\r\n,x"\r\nc,plain\r\n';
    expect(leadingRows({ text, rows: 3 }, 1)).toEqual({ text: 'a,"line\r\nbreak"\r\n', rows: 1 });
    expect(leadingRows({ text, rows: 3 }, 2)).toEqual({ text: 'a,"line\r\nbreak"\r\nb,"say ""hi""\r\n,x"\r\n', rows: 2 });
    expect(leadingRows({ text, rows: 3 }, 3)).toEqual({ text, rows: 3 });
  });

  it("cuts rows", () => {
    expect(leadingRows([["1"], ["2"], ["3"]], 2)).toEqual([["1"], ["2"]]);
  });
});
