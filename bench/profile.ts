// `npm run bench:profile`: one export run in this Node process (not workerd) against the zero-cost
// bench upstream, a few times over, with CPU per run and per page stage. Node runs the same V8 as
// workerd, so it answers "where does an export's CPU go" quickly; `--cpu-prof` gives the profile.
// Memory is printed too, but this process also holds the upstream's serialised rows: compare runs.
//   PROFILE_FORMAT=csv|json (csv)  PROFILE_ROWS (250000)  PROFILE_RUNS (4)  PROFILE_CKAN=2.12|2.10 (2.10)
//   PROFILE_SORT=_id: the link sorts by `_id` itself, so pages go by offset (CKAN 2.10: against `_id` lists)
import { BASE, RICH } from "./ckan/tables.ts";
import { startUpstream, type Version } from "./upstream.ts";
import { parseConfig } from "../src/config/config.ts";
import type { Env } from "../src/config/env.ts";
import { siteFor } from "../src/ckan/site.ts";
import { parseExportQuery } from "../src/query/export-query.ts";
import { openExport } from "../src/export/pipeline.ts";
import type { FormatName } from "../src/query/formats.ts";

const format = (process.env.PROFILE_FORMAT ?? "csv") as FormatName;
const rows = Number(process.env.PROFILE_ROWS ?? 250_000);
const runs = Number(process.env.PROFILE_RUNS ?? 4);
const table = process.env.PROFILE_TABLE === "rich" ? RICH : BASE;
const id = "be4c0000-0000-4000-8000-000000000001";
const up = await startUpstream({
  resources: [{ id, shape: table, rows: Math.max(rows, 1) }],
  version: (process.env.PROFILE_CKAN ?? "2.10") as Version,
});
try {
  const env = { CKAN_BASE_URL: up.url, RESOURCES: JSON.stringify({ t: id }), MAX_ROWS: "5000000" } as unknown as Env;
  const config = parseConfig(env);
  const fetcher = (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => fetch(input, init);
  // The first run also serialises the upstream's pages: only later runs count.
  for (let i = 0; i <= runs; i++) {
    const query = parseExportQuery(
      new URLSearchParams({
        resource: "t",
        limit: String(rows),
        ...(process.env.PROFILE_SORT ? { sort: process.env.PROFILE_SORT } : {}),
      }),
      format,
      config,
    );
    const cpu = process.cpuUsage();
    const wall = performance.now();
    const run = await openExport(query, config, siteFor(config, fetcher));
    const reader = run.body.getReader();
    let bytes = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
    }
    const used = process.cpuUsage(cpu);
    const memory = process.memoryUsage();
    const mb = (n: number): string => (n / 2 ** 20).toFixed(0);
    const label = i === 0 ? "warm-up" : `run ${i}`;
    console.log(
      `${label}: ${format} ${rows} rows, ${(bytes / 2 ** 20).toFixed(1)} MB in ${((performance.now() - wall) / 1000).toFixed(2)} s, CPU ${((used.user + used.system) / 1e6).toFixed(2)} s (includes the upstream's); RSS ${mb(memory.rss)} MB, heap ${mb(memory.heapUsed)} of ${mb(memory.heapTotal)} MB, array buffers ${mb(memory.arrayBuffers)} MB`,
    );
  }
} finally {
  await up.close();
}
