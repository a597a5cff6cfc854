// The README's parameter table is the parameter table in src/query/params.ts, rendered.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { withParameterTable } from "../../scripts/docs.ts";

describe("README", () => {
  it("lists exactly the parameters the parser knows (npm run docs rewrites the table)", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    expect(readme, "README.md's parameter table is stale: run npm run docs").toBe(withParameterTable(readme));
  });
});
