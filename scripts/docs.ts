// `npm run docs`: writes the README's parameter table from the one parameter table
// (src/query/params.ts), between its markers. test/node/docs.test.ts fails when they differ.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parametersMarkdown } from "../src/query/params.ts";

export const START = "<!-- parameters: written by npm run docs from src/query/params.ts -->";
export const END = "<!-- /parameters -->";

/** The README with its parameter table replaced by the rendered one. */
export function withParameterTable(readme: string): string {
  const from = readme.indexOf(START);
  const to = readme.indexOf(END);
  if (from < 0 || to < from) throw new Error(`README.md has no ${START} ... ${END} block`);
  return `${readme.slice(0, from + START.length)}\n${parametersMarkdown()}\n${readme.slice(to)}`;
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].split("/").pop() ?? "-")) {
  const path = fileURLToPath(new URL("../README.md", import.meta.url));
  writeFileSync(path, withParameterTable(readFileSync(path, "utf8")));
}
