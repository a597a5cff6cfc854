import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const biome = createRequire(import.meta.url).resolve("@biomejs/biome/bin/biome");

describe("the tree's format", () => {
  it("is Biome's (npm run format rewrites it; biome.json says how)", () => {
    let output = "";
    try {
      execFileSync(process.execPath, [biome, "ci", "--formatter-enabled=true", "--linter-enabled=true", "."], {
        cwd: ROOT,
        encoding: "utf8",
        stdio: "pipe",
      });
    } catch (error) {
      const failed = error as { stdout?: string; stderr?: string };
      output = `${failed.stdout ?? ""}${failed.stderr ?? ""}`;
    }
    expect(output, "run npm run format").toBe("");
  });
});
