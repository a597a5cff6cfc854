// Every function in src/ is under 60 lines (issue 24): a function that long does more than one job.
// Each function is found with the TypeScript compiler's own parser, so a nested or arrow function
// counts on its own, and its lines are counted from its first line to its last.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const MAX_LINES = 60;

function modules(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return modules(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

/** A function's name as a reader would look for it: its own, or the variable or property it is assigned to. */
function nameOf(node: ts.Node): string {
  const named = node as ts.Node & { name?: ts.Node };
  if (named.name !== undefined) return named.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText();
  return "(anonymous)";
}

/** `file:name lines` for each function of `path` that is MAX_LINES lines or more. */
function longFunctions(path: string): string[] {
  const text = readFileSync(join(ROOT, path), "utf8");
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines >= MAX_LINES) found.push(`${path}:${nameOf(node)} ${lines}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("function length", () => {
  it(`keeps every function in src/ under ${MAX_LINES} lines`, () => {
    expect(modules("src").flatMap(longFunctions)).toEqual([]);
  });
});
