import { describe, expect, it } from "vitest";
import { accumulatorFactory } from "./measures.ts";

/** A measure over CKAN's JSON texts of a float8 column's cells, as the rows fold adds them. */
function measure(fn: "sum" | "avg", cells: string[]): string {
  const accumulator = accumulatorFactory(fn, "x", "float")();
  for (const cell of cells) accumulator.add(cell);
  return accumulator.result();
}

describe("float8 sums and averages, as PostgreSQL computes them", () => {
  it("sum starts from the first value (a sum of -0 alone is -0), avg from 0", () => {
    expect(measure("sum", ["-0"])).toBe("-0");
    expect(measure("sum", ["-0", "-0"])).toBe("-0");
    expect(measure("sum", ["-0", "0"])).toBe("0");
    expect(measure("sum", ["0"])).toBe("0");
    expect(measure("avg", ["-0"])).toBe("0");
    expect(measure("sum", ["0.1", "0.2"])).toBe("0.30000000000000004");
    expect(measure("sum", [])).toBe("null");
  });
});
