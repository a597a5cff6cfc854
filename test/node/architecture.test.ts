// The shape of the code, checked: imports point one way (no cycles, no leaf importing what sits
// above it), and the deployed worker is exactly the non-test modules under src/ (no test tool in it).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { OFFLINE_WRANGLER } from "../../scripts/offline.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * Layers, lowest first, in the pipeline's order: query string -> validated export query -> upstream
 * pages -> encoder -> byte stream -> sinks -> routes. Below them sit what every layer shares: the
 * configuration, errors and logging; the row model (which upstream produces and encoders consume)
 * and the rules of HTTP every sink follows (conditional requests, ranges, cache keys); link guards.
 * A module may import its own folder or a lower rank, never a higher one or a sibling of its rank.
 */
const LAYERS: Array<[string, number, RegExp]> = [
  ["config", 1, /^src\/config\//],
  ["errors", 0, /^src\/errors\.ts$/],
  ["log", 2, /^src\/log\//],
  ["rows", 3, /^src\/rows\//],
  ["protocol", 3, /^src\/protocol\//],
  ["query", 4, /^src\/query\//],
  ["security", 4, /^src\/security\//],
  ["upstream", 5, /^src\/ckan\//],
  ["encode", 6, /^src\/format\//],
  ["stream", 7, /^src\/export\//],
  // Aggregates read pages (upstream) and hand their rows to the byte stream; sinks and routes use them.
  ["aggregate", 7.5, /^src\/aggregate\//],
  ["http sink", 8, /^src\/http\//],
  ["r2 sink", 8, /^src\/snapshot\//],
  ["discovery", 8, /^src\/discovery\//],
  ["routes", 9, /^src\/routes\//],
  ["app", 10, /^src\/app\.ts$/],
  ["index", 11, /^src\/index\.ts$/],
];

const layerOf = (file: string): [string, number] => {
  const found = LAYERS.find(([, , pattern]) => pattern.test(file));
  if (found === undefined) throw new Error(`${file} belongs to no layer`);
  return [found[0], found[1]];
};

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

/** Relative imports of each module (type-only ones too: they tie the layers as much). */
function importGraph(files: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(join(ROOT, file), "utf8");
    const targets = [...text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+"(\.[^"]+)"/gms)].map((m) =>
      normalize(join(dirname(file), m[1]!)).replaceAll("\\", "/"),
    );
    graph.set(file, targets);
  }
  return graph;
}

function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, "open");
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === "open") found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (state.get(next) === undefined) visit(next);
    }
    stack.pop();
    state.set(node, "done");
  };
  for (const node of graph.keys()) if (state.get(node) === undefined) visit(node);
  return found;
}

describe("the import graph of src/", () => {
  const files = sourceFiles("src");
  const graph = importGraph(files);

  it("has no cycles", () => {
    expect(cycles(graph).map((cycle) => cycle.join(" -> "))).toEqual([]);
  });

  it("only imports downwards: a module never imports a layer above it or a sibling layer", () => {
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      const [from, fromRank] = layerOf(file);
      for (const target of targets) {
        const [to, toRank] = layerOf(target);
        if (to !== from && toRank >= fromRank) upward.push(`${file} (${from}) imports ${target} (${to})`);
      }
    }
    expect(upward).toEqual([]);
  });

  it("keeps test tools out: no module under src/ imports the emulator, scripts or tests", () => {
    const outside = [...graph].flatMap(([file, targets]) =>
      targets.filter((t) => !t.startsWith("src/")).map((t) => `${file} imports ${t}`),
    );
    expect(outside).toEqual([]);
  });

  it("is what the deployed bundle is built from: exactly the non-test modules under src/ (types-only ones erased)", () => {
    const out = mkdtempSync(join(tmpdir(), "datastore-export-bundle-"));
    try {
      const wrangler = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
      const meta = join(out, "meta.json");
      const run = spawnSync(process.execPath, [wrangler, "deploy", "--dry-run", "--outdir", out, "--metafile", meta], {
        cwd: ROOT,
        env: { ...process.env, ...OFFLINE_WRANGLER },
        encoding: "utf8",
      });
      expect(run.status, run.stderr || run.stdout).toBe(0);
      const inputs = Object.keys((JSON.parse(readFileSync(meta, "utf8")) as { inputs: Record<string, unknown> }).inputs)
        .map((path) => relative(ROOT, join(ROOT, path)).replaceAll("\\", "/"))
        .filter((path) => !path.includes("node_modules/"));
      // A module of types only is erased before bundling: it leaves nothing to bundle.
      const runtime = files.filter((file) =>
        /^export\s+(?!type\b|interface\b)/m.test(readFileSync(join(ROOT, file), "utf8")),
      );
      expect(inputs.sort()).toEqual(runtime.sort());
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 60_000);
});
