// README's code map, checked against the tree: every module of the worker is named under its folder,
// and every name the map gives is a module that exists, so the map cannot drift from the code.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The code map: the fenced block of README's Development section that starts with src/index.ts, by its first column. */
function codeMap(): Map<string, string> {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf("```\nsrc/index.ts");
  const block = readme.slice(start + 4, readme.indexOf("\n```", start + 4));
  const entries = new Map<string, string>();
  let current = "";
  for (const line of block.split("\n")) {
    if (line.startsWith(" ")) {
      entries.set(current, `${entries.get(current)} ${line.trim()}`);
    } else {
      current = line.split(/\s+/)[0]!;
      entries.set(current, line.slice(current.length));
    }
  }
  return entries;
}

function modules(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return modules(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

const names = (text: string): string[] => [...text.matchAll(/(?<![\w./-])([a-z][\w-]*\.ts)\b/g)].map((m) => m[1]!);

describe("README's code map", () => {
  const map = codeMap();

  it("names every module of src/ under its folder", () => {
    const missing = modules("src").filter((path) => {
      if (map.has(path)) return false;
      const folder = `${path.slice(0, path.lastIndexOf("/"))}/`;
      return !names(map.get(folder) ?? "").includes(path.slice(folder.length));
    });
    expect(missing).toEqual([]);
  });

  it("names no module of src/ that does not exist", () => {
    const ghosts = [...map]
      .filter(([entry]) => entry.startsWith("src/") && entry.endsWith("/"))
      .flatMap(([folder, text]) =>
        names(text)
          .filter((name) => !existsSync(join(ROOT, folder, name)) && !/^wrangler|^npm/.test(name))
          .map((name) => folder + name),
      );
    expect(ghosts).toEqual([]);
  });
});
