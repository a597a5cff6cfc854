// Route policy is declared on the route and applied in one place (src/routes/pipeline.ts): no handler
// or sink calls a guard or answers preconditions by hand, so a route's entry says all it demands.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

function modules(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return modules(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

/** Modules that call `name(` outside its own definition. */
const callers = (name: string): string[] =>
  modules("src").filter((path) => {
    const text = readFileSync(join(ROOT, path), "utf8");
    return new RegExp(`(?<!function )\\b${name}\\(`).test(text);
  });

describe("route policy", () => {
  it("runs the guards only in the route pipeline", () => {
    for (const guard of ["requireSignedLink", "requireAdmin", "enforceRateLimit"])
      expect(callers(guard), guard).toEqual(["src/routes/pipeline.ts"]);
  });

  it("answers preconditions in the route pipeline, and ahead of an R2 read only in the snapshot file sink", () => {
    expect(callers("conditionalAnswer").sort()).toEqual(["src/routes/pipeline.ts", "src/routes/snapshot-file.ts"]);
  });
});
