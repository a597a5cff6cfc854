// Route policy is declared on the route and applied in one place (src/routes/pipeline.ts, and the
// cache policy it applies, src/routes/cache-policy.ts): no handler or sink calls a guard, answers
// preconditions, reads the edge cache or sets Cache-Control by hand, so a route's entry says all it
// demands and how its answers may be kept.
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

/** Modules whose text matches `pattern`. */
const matching = (pattern: RegExp): string[] =>
  modules("src").filter((path) => pattern.test(readFileSync(join(ROOT, path), "utf8")));

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

  it("declares on each route how its answers may be kept", async () => {
    // Imported by name only: this folder's type check runs without the Workers types the routes use.
    const table: string = "../../src/routes/table.ts";
    const { ROUTES } = (await import(table)) as { ROUTES: { path: string; cache: { kind: string } }[] };
    const declared = Object.fromEntries(ROUTES.map((route) => [route.path, route.cache.kind]));
    expect(declared).toEqual({
      "/": "unset",
      "/export.:format": "edge",
      "/aggregate.:format": "edge",
      "/resources": "edge",
      "/resources/:alias": "edge",
      "/openapi.json": "max-age",
      "/health": "max-age",
      "/links": "no-store",
      "/snapshots": "no-cache",
      "/snapshots/:name/run": "no-store",
      "/snapshots/:name/:file": "stored",
    });
  });

  it("reads and writes the edge cache only through the routes' cache policy", () => {
    expect(matching(/caches\.default/)).toEqual(["src/http/edge-cache.ts"]);
    expect(matching(/from "\.\.\/http\/edge-cache\.ts"/)).toEqual(["src/routes/cache-policy.ts"]);
  });

  it("sets Cache-Control and X-Cache only in the cache policy, the stored entries and the error answers", () => {
    // An error answer is never kept (no-store), whichever route it comes from: the two error renderers say so.
    expect(
      matching(
        /\.set\(\s*["'](cache-control|x-cache|x-cache-note)["']|["'](cache-control|x-cache|x-cache-note)["']\s*:/i,
      ).sort(),
    ).toEqual(["src/errors.ts", "src/http/edge-cache.ts", "src/http/inline-error.ts", "src/routes/cache-policy.ts"]);
  });
});
