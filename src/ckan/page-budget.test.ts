import { describe, expect, it } from "vitest";
import { FIRST_PAGE_ROWS, PageSizer, ROW_PAGE_BYTES, TARGET_PAGE_BYTES } from "./page-budget.ts";

describe("page sizes", () => {
  it("starts small, then sizes pages by the bytes a row costs, up to the cap", () => {
    const sizer = new PageSizer(32000);
    expect(sizer.rows).toBe(FIRST_PAGE_ROWS);
    sizer.observe(50 * 1000, 1000);
    expect(sizer.rows).toBe(32000);
    sizer.observe(10_000 * 1000, 1000);
    expect(sizer.rows).toBe(Math.floor(TARGET_PAGE_BYTES / 10_000));
  });

  it("gives pages read as rows fewer bytes: a row costs several times its bytes in heap", () => {
    const sizer = new PageSizer(32000, ROW_PAGE_BYTES);
    sizer.observe(100 * 1000, 1000);
    expect(sizer.rows).toBe(Math.floor(ROW_PAGE_BYTES / 100));
  });

  it("never asks for more than the site applied", () => {
    const sizer = new PageSizer(32000);
    sizer.capAt(300);
    sizer.observe(100, 300);
    expect(sizer.rows).toBe(300);
  });
});
