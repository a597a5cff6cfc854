// npm runs a dependency's install scripts only when package.json's allowScripts approves it (npm 11
// warns about the others, npm 12 skips them): the packages whose scripts the project needs are listed.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");

interface Manifest {
  name: string;
  scripts?: Record<string, string>;
  allowScripts?: Record<string, boolean>;
}

/** Every installed package (scoped ones included) with an install-time script. */
function withInstallScripts(): string[] {
  const folder = join(ROOT, "node_modules");
  const names = readdirSync(folder).flatMap((name) =>
    name.startsWith("@") ? readdirSync(join(folder, name)).map((inner) => `${name}/${inner}`) : [name],
  );
  return names.filter((name) => {
    if (name.startsWith(".")) return false;
    try {
      const { scripts } = JSON.parse(readFileSync(join(folder, name, "package.json"), "utf8")) as Manifest;
      return ["preinstall", "install", "postinstall"].some((hook) => scripts?.[hook] !== undefined);
    } catch {
      return false;
    }
  });
}

describe("npm install", () => {
  it("runs the install scripts the project needs (Node 24, workerd, esbuild), each approved in allowScripts", () => {
    const { allowScripts } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as Manifest;
    const needed = withInstallScripts();
    expect(needed).toEqual(expect.arrayContaining(["esbuild", "node", "workerd"]));
    expect(needed.filter((name) => allowScripts?.[name] !== true)).toEqual([]);
  });
});
