// `npm run bench:paired -- <git ref>`: the worker's CPU per export at another commit against the
// working tree's, in workerd, paired. A change of a few percent hides in one machine's run-to-run
// spread (10-20% here on a shared machine), so both builds run side by side in two `wrangler dev`
// processes against one zero-cost upstream, and their exports alternate (which goes first swaps every
// round); the median of each round's ratio is what to read.
//   PAIRED_ROUNDS (8)  PAIRED_ROWS (1000000)  PAIRED_FORMAT=csv|json|... (csv)  PAIRED_TABLE=base|rich (base)
//   PAIRED_CKAN=2.12|2.11|2.10 (2.10)
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { BASE, RICH } from "./ckan/tables.ts";
import { download } from "./http.ts";
import { startUpstream, type Version } from "./upstream.ts";
import { benchVars, buildWorker, killAllNow, sample, settle, startWrangler, type Wrangler } from "./workerd.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const ref = process.argv[2];
if (ref === undefined) {
  console.error("usage: npm run bench:paired -- <git ref to compare the working tree with>");
  process.exit(2);
}
const rounds = Number(process.env.PAIRED_ROUNDS ?? 8);
const rows = Number(process.env.PAIRED_ROWS ?? 1_000_000);
const format = process.env.PAIRED_FORMAT ?? "csv";
const shape = process.env.PAIRED_TABLE === "rich" ? RICH : BASE;
const id = "c0c00000-0000-4000-8000-000000000001";
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1]!;

const scratch = mkdtempSync(join(tmpdir(), "datastore-export-paired-"));
const other = join(scratch, "other");
execFileSync("git", ["-C", root, "worktree", "add", "--detach", other, ref], { stdio: "ignore" });
try {
  // The other commit builds with this checkout's packages: a comparison of code, not of dependencies.
  symlinkSync(join(root, "node_modules"), join(other, "node_modules"));
  const version = (process.env.PAIRED_CKAN ?? "2.10") as Version;
  const up = await startUpstream({ resources: [{ id, shape, rows }], version });
  const vars = benchVars(up.url, { bench: id }, { MAX_ROWS: "5000000" });
  const workers: { name: string; worker: Wrangler }[] = [];
  for (const [name, tree] of [
    [ref, other],
    ["working tree", root],
  ] as const) {
    const built = buildWorker(tree, join(scratch, `build-${workers.length}`));
    const worker = await startWrangler({
      root: tree,
      ...built,
      vars,
      persistTo: join(scratch, `state-${workers.length}`),
      v8Flags: "--max-old-space-size=128",
    });
    workers.push({ name, worker });
  }
  const url = (w: Wrangler): string => `${w.url}/export.${format}?resource=bench`;
  const exportOnce = async (w: Wrangler): Promise<number> => {
    const before = sample(w.workerPid).cpuSeconds;
    const got = await download(url(w), {}, () => () => {});
    if (got.status !== 200 || got.cutOff !== undefined)
      throw new Error(`an export at ${w.url} did not complete: HTTP ${got.status} ${got.cutOff ?? ""}`);
    await settle(w.workerPid);
    return sample(w.workerPid).cpuSeconds - before;
  };
  // Each serialises its pages once in the upstream and warms its isolate before anything counts.
  for (const { worker } of workers) await exportOnce(worker);
  const cpu: number[][] = [[], []];
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const k of order) cpu[k]!.push(await exportOnce(workers[k]!.worker));
  }
  const ratios = cpu[1]!.map((now, k) => now / cpu[0]![k]!);
  const list = (values: number[]): string => values.map((v) => v.toFixed(2)).join(" ");
  console.log(`${shape.name} ${format}, ${rows.toLocaleString("en")} rows, CKAN ${version}, CPU s per export:`);
  for (const [k, { name }] of workers.entries())
    console.log(`  ${name}: ${list(cpu[k]!)} (median ${median(cpu[k]!).toFixed(2)})`);
  console.log(`  working tree / ${ref}, median of the rounds' ratios: ${median(ratios).toFixed(3)}`);
  for (const { worker } of workers) await worker.stop();
  await up.close();
} finally {
  killAllNow();
  execFileSync("git", ["-C", root, "worktree", "remove", "--force", other], { stdio: "ignore" });
  rmSync(scratch, { recursive: true, force: true });
}
