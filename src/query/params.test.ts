import { describe, expect, it } from "vitest";
import { parseConfig } from "../config/config.ts";
import { FORMATS, type FormatName } from "./formats.ts";
import { parametersFor, parameterEntry, PARAMETERS } from "./params.ts";
import { allowedParams, parseExportQuery } from "./export-query.ts";
import { parseAggregateQuery } from "../aggregate/query.ts";

const config = parseConfig({ CKAN_BASE_URL: "https://portal.example", RESOURCES: { sample: "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2" } });

describe("the parameter table", () => {
  it("describes every parameter the parser accepts, per format, and no other", () => {
    for (const format of Object.keys(FORMATS) as FormatName[]) {
      const documented = parametersFor(format).filter((p) => !p.pattern && !p.link).map((p) => p.name);
      expect(documented.sort()).toEqual(allowedParams(format).sort());
    }
  });

  it("gives examples the parser accepts", () => {
    for (const p of PARAMETERS.filter((p) => !p.link)) {
      const url = new URL(p.example, "https://x.test");
      // Each example for the format of its own path (`/export.parquet?...&numeric=double`, `/aggregate.csv?...`).
      const [, kind, format] = /^\/(export|aggregate)\.(\w+)$/.exec(url.pathname) ?? [];
      const parse = kind === "aggregate" ? parseAggregateQuery : parseExportQuery;
      expect(() => parse(url.searchParams, format as FormatName, config), p.name).not.toThrow();
    }
  });

  it("finds the entry for a parameter named in an error", () => {
    expect(parameterEntry("limit")?.name).toBe("limit");
    expect(parameterEntry("filter.year")?.name).toBe("filter.<field>");
    expect(parameterEntry("filter.year[gte]")?.name).toBe("filter.<field>[gt|gte|lt|lte]");
    expect(parameterEntry("url")).toBeUndefined();
  });
});
