import { describe, expect, it } from "vitest";
import { acceptsGzip, storedEncoding } from "./compress.ts";

describe("gzip snapshots", () => {
  it("are sent gzipped to a client whose Accept-Encoding takes gzip, and only then", () => {
    for (const header of ["gzip", "gzip, deflate, br", "br;q=1.0, gzip;q=0.8", "x-gzip", "*", "GZIP"])
      expect(acceptsGzip(header), header).toBe(true);
    for (const header of [null, "", "identity", "br", "deflate, gzip;q=0", "gzip;q=0.0", "*;q=0", "*, gzip;q=0"])
      expect(acceptsGzip(header), String(header)).toBe(false);
  });

  it("apply to the text formats: XLSX and Parquet are compressed inside already", () => {
    expect(
      ["csv", "tsv", "json", "ndjson", "xlsx", "parquet"].map((f) => storedEncoding({ compress: "gzip" }, f as "csv")),
    ).toEqual(["gzip", "gzip", "gzip", "gzip", undefined, undefined]);
    expect(storedEncoding({ compress: undefined }, "csv")).toBeUndefined();
  });
});
