import { describe, expect, it } from "vitest";
import { BadParameter, ExportLimit, RowLimitExceeded } from "../errors.ts";
import { checkRowLimit, rowLimitOf, whoseMaximum } from "./row-limit.ts";

describe("the row limit, worked out once per export query", () => {
  it("is the worker's MAX_ROWS, or an XLSX sheet's rows below its header when lower", () => {
    expect(rowLimitOf("csv", 2_000_000)).toEqual({ rows: 2_000_000, format: "csv", formatOwn: false });
    expect(rowLimitOf("xlsx", 2_000_000)).toEqual({ rows: 1_048_575, format: "xlsx", formatOwn: true });
    expect(rowLimitOf("xlsx", 1000)).toEqual({ rows: 1000, format: "xlsx", formatOwn: false });
    expect(whoseMaximum(rowLimitOf("xlsx", 2_000_000))).toBe(
      "the xlsx format's maximum of 1048575 rows (a sheet's rows, less the header)",
    );
  });

  it("refuses more rows than it holds with a 400 on limit that says how many match and whose maximum it is", () => {
    const csv = rowLimitOf("csv", 1000);
    expect(() => checkRowLimit(csv, 1000, "exact")).not.toThrow();
    const refusal = (() => {
      try {
        checkRowLimit(csv, 1001, "about");
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(RowLimitExceeded);
    expect(refusal).toBeInstanceOf(ExportLimit);
    expect(refusal).toBeInstanceOf(BadParameter);
    expect(refusal).toMatchObject({ status: 400, parameter: "limit" });
    expect((refusal as Error).message).toBe(
      "About 1001 rows match, more than this worker's maximum of 1000 rows per export. Add limit=1000 (or less), narrow with filters or q, or export in parts with offset.",
    );
    expect(() => checkRowLimit(rowLimitOf("xlsx", 5_000_000), 1_048_576, "more")).toThrow(
      /^More than 1048575 rows match, .* A xlsx sheet holds 1048575 rows below its header: export CSV for more\.$/,
    );
  });
});
