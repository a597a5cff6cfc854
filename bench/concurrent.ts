// `npm run bench:concurrent`: several large exports at once in ONE isolate, as production runs many
// requests in one 128 MB isolate. Four 500,000-row exports (two CSV, two JSON) start together against
// the synthetic upstream; the worker runs in `wrangler dev` with V8's heap capped at 128 MB. Prints,
// per export, whether it completed (rows counted, stream ended cleanly) and its time, and the
// isolate's peak RSS. Memory per export is the pages in flight (UPSTREAM_CONCURRENCY) x page bytes.
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { BASE } from "./ckan/tables.ts";
import { startUpstream } from "./upstream.ts";
import { benchVars, buildWorker, killAllNow, sample, startWrangler } from "./workerd.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const ROWS = Number(process.env.CONCURRENT_ROWS ?? 500_000);
const EXPORTS = (process.env.CONCURRENT_FORMATS ?? "csv,json,csv,json").split(",") as ("csv" | "json")[];
const HEAP_CAP = process.env.BENCH_V8_FLAGS ?? "--max-old-space-size=128";
const RESOURCE_ID = "c0c00000-0000-4000-8000-000000000001";

/** Reads a whole response, counting its lines, without keeping it. */
function download(
  url: string,
): Promise<{ status: number; bytes: number; lines: number; complete: boolean; seconds: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let bytes = 0;
      let lines = 0;
      res.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, at + 1)) lines++;
      });
      const done = (complete: boolean) => () =>
        resolve({ status: res.statusCode ?? 0, bytes, lines, complete, seconds: (performance.now() - started) / 1000 });
      res.on("end", done(true));
      res.on("aborted", done(false));
      res.on("error", done(false));
    })
      .on("error", reject)
      .end();
  });
}

const scratch = mkdtempSync(join(tmpdir(), "datastore-export-concurrent-"));
try {
  // CKAN 2.12 at zero cost: the isolate, not the upstream, is what is measured; pages come as _id ranges.
  const up = await startUpstream({ resources: [{ id: RESOURCE_ID, shape: BASE, rows: ROWS }], version: "2.12" });
  const built = buildWorker(root, scratch);
  const worker = await startWrangler({
    root,
    ...built,
    vars: benchVars(up.url, { bench: RESOURCE_ID }),
    persistTo: join(scratch, "state"),
    v8Flags: HEAP_CAP,
  });
  let peak = 0;
  const watch = setInterval(() => (peak = Math.max(peak, sample(worker.workerPid).rssMb)), 100);
  const idle = sample(worker.workerPid).rssMb;
  const results = await Promise.all(EXPORTS.map((format) => download(`${worker.url}/export.${format}?resource=bench`)));
  clearInterval(watch);
  peak = Math.max(peak, sample(worker.workerPid).peakMb);
  console.log(
    `${EXPORTS.length} exports of ${ROWS.toLocaleString("en")} rows at once, one isolate, V8 flags "${HEAP_CAP}"; RSS idle ${idle.toFixed(0)} MB, peak ${peak.toFixed(0)} MB`,
  );
  console.log("| export | status | complete | rows | MB | s |\n|---|---|---|---|---|---|");
  for (const [i, r] of results.entries()) {
    // CSV: a header line plus one line per row; JSON: "[", one line per record, "]".
    const rows = EXPORTS[i] === "csv" ? r.lines - 1 : r.lines - 2;
    console.log(
      `| ${EXPORTS[i]} | ${r.status} | ${r.complete && rows === ROWS ? "yes" : "NO"} | ${rows.toLocaleString("en")} | ${(r.bytes / 1048576).toFixed(1)} | ${r.seconds.toFixed(2)} |`,
    );
  }
  await worker.stop();
  await up.close();
  if (results.some((r, i) => !r.complete || (EXPORTS[i] === "csv" ? r.lines - 1 : r.lines - 2) !== ROWS))
    process.exitCode = 1;
} finally {
  killAllNow();
  rmSync(scratch, { recursive: true, force: true });
}
