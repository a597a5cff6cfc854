// The README's parameter table is the parameter table in src/query/params.ts, rendered.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { withParameterTable } from "../../scripts/docs.ts";

describe("README", () => {
  it("lists exactly the parameters the parser knows (npm run docs rewrites the table)", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    expect(readme, "README.md's parameter table is stale: run npm run docs").toBe(withParameterTable(readme));
  });

  it("lists each error status once, in order", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const table = readme.slice(readme.indexOf("| status | when |"));
    const statuses = table
      .slice(0, table.indexOf("\n\n"))
      .split("\n")
      .slice(2)
      .map((row) => Number(/^\| (\d{3}) \|/.exec(row)?.[1]));
    expect(statuses.length).toBeGreaterThan(5);
    expect(statuses).toEqual([...new Set(statuses)].sort((a, b) => a - b));
  });

  it("names the CKAN path the worker and setup call: /api/action/, which the code alone uses", () => {
    const root = join(import.meta.dirname, "..", "..");
    const sources = ["src", "scripts"].flatMap((folder) =>
      readdirSync(join(root, folder), { recursive: true, encoding: "utf8" })
        .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts"))
        .map((file) => join(root, folder, file)),
    );
    const calls = sources.flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(/\/api(\/3)?\/action\/\$\{|\/api(\/3)?\/action\/[a-z_]+/g)].map(
        (match) => match[0],
      ),
    );
    expect(calls.length).toBeGreaterThan(2);
    expect(calls.filter((call) => call.includes("/api/3/"))).toEqual([]);
    const readme = readFileSync(join(root, "README.md"), "utf8");
    expect(readme).toContain("the worker calls `${CKAN_BASE_URL}/api/action/datastore_search`");
    expect(readme).toContain("Every call goes to `${CKAN_BASE_URL}/api/action/<action>`");
  });
});
