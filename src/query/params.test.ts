import { describe, expect, it } from "vitest";
import { parseAggregateQuery } from "../aggregate/query.ts";
import { parseConfig } from "../config/config.ts";
import { FORMATS, type FormatName } from "./formats.ts";
import { parametersFor, parameterEntry, PARAMETERS } from "./params.ts";
import { parseExportQuery } from "./export-query.ts";

const config = parseConfig({
  CKAN_BASE_URL: "https://portal.example",
  RESOURCES: { sample: "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2" },
});

describe("the parameter table", () => {
  it("enforces what it declares: every value of an enum is taken, any other refused naming the parameter", () => {
    for (const format of Object.keys(FORMATS) as FormatName[]) {
      for (const p of parametersFor(format).filter((p) => p.schema.enum !== undefined)) {
        for (const value of p.schema.enum!) {
          // decimal=, needs a delimiter other than the comma (a rule between two parameters).
          const extra = p.name === "decimal" && format === "csv" ? "&delimiter=;" : "";
          const link = `resource=sample&${p.name}=${encodeURIComponent(value)}${extra}`;
          // A sheet or a Parquet file always has its header: header=0 is documented as CSV/TSV only.
          if (p.name === "header" && ["0", "false"].includes(value) && (format === "xlsx" || format === "parquet"))
            continue;
          expect(() => parseExportQuery(new URLSearchParams(link), format, config), `${format} ${link}`).not.toThrow();
        }
        expect(() => parseExportQuery(new URLSearchParams(`resource=sample&${p.name}=nope`), format, config)).toThrow(
          expect.objectContaining({ status: 400, parameter: p.name }),
        );
      }
    }
  });

  it("takes a parameter only for the formats it declares, and says which take it", () => {
    for (const format of Object.keys(FORMATS) as FormatName[]) {
      for (const p of PARAMETERS.filter(
        (p) => !p.pattern && !p.link && p.formats !== undefined && !p.formats.includes(format),
      )) {
        expect(() => parseExportQuery(new URLSearchParams(`resource=sample&${p.name}=1`), format, config)).toThrow(
          `(it is for ${p.formats!.join(" and ")})`,
        );
      }
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
