// `npm run bench:profile-workerd`: one export in `wrangler dev` (workerd, the runtime production
// runs) under V8's sampling profiler, read over the inspector: where the worker's own CPU goes, by
// function and source file, against a zero-cost upstream. bench:profile answers the same in Node
// more quickly, but Node's TextDecoder, zlib and typed arrays are not workerd's: Parquet's page
// decoding took 16% of its CPU in Node and 11% in workerd. Writes bench/tmp/<format>.cpuprofile
// (Chromium's DevTools open it) and prints the functions taking the most time.
//   PROFILE_FORMAT=csv|json|xlsx|parquet|... (parquet)  PROFILE_ROWS (1000000)  PROFILE_TOP (30)
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { BASE } from "./ckan/tables.ts";
import { download } from "./http.ts";
import { startUpstream } from "./upstream.ts";
import { benchVars, buildWorker, killAllNow, startWrangler } from "./workerd.ts";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const format = process.env.PROFILE_FORMAT ?? "parquet";
const rows = Number(process.env.PROFILE_ROWS ?? 1_000_000);
const top = Number(process.env.PROFILE_TOP ?? 30);
const root = fileURLToPath(new URL("..", import.meta.url));
const scratch = join(root, "bench", "tmp", `profile-${process.pid}`);
const id = "9f0f0000-0000-4000-8000-000000000001";

/** A client of the isolate's inspector (the user worker's, as bench/inspector.ts finds it). */
async function inspector(
  port: number,
): Promise<{ call<T>(method: string, params?: object): Promise<T>; close(): void }> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { webSocketDebuggerUrl?: string }[];
  const url = targets.find((t) => t.webSocketDebuggerUrl !== undefined)?.webSocketDebuggerUrl;
  if (url === undefined) throw new Error(`no inspector target on port ${port}`);
  // wrangler's proxy wants an Origin (see bench/inspector.ts).
  const WithHeaders = WebSocket as unknown as new (url: string, init: { headers: Record<string, string> }) => WebSocket;
  const socket = new WithHeaders(url, { headers: { origin: "http://localhost" } });
  await new Promise((resolve, reject) => {
    socket.addEventListener("open", resolve, { once: true });
    socket.addEventListener("error", () => reject(new Error("the inspector's WebSocket failed to open")), {
      once: true,
    });
  });
  let next = 0;
  const waiting = new Map<number, (result: unknown) => void>();
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
    if (message.id !== undefined) waiting.get(message.id)?.(message.result);
  });
  return {
    call: <T>(method: string, params: object = {}) =>
      new Promise<T>((resolve) => {
        const callId = ++next;
        waiting.set(callId, (result) => resolve(result as T));
        socket.send(JSON.stringify({ id: callId, method, params }));
      }),
    close: () => socket.close(),
  };
}

/** The source file of each bundle line, from the `// src/...` comment esbuild writes before each module. */
function sourceFiles(bundle: string): (line: number) => string {
  const starts: [number, string][] = [];
  readFileSync(bundle, "utf8")
    .split("\n")
    .forEach((text, line) => {
      const match = /^\/\/ ((?:src|node_modules)\/\S+)$/.exec(text);
      if (match) starts.push([line, match[1]!.replace(/^node_modules\//, "")]);
    });
  return (line) => {
    let file = "";
    for (const [start, name] of starts) if (start <= line) file = name;
    return file;
  };
}

/** Self time per function, the largest first. */
function selfTimes(profile: Profile, fileOf: (line: number) => string): [string, number][] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const times = new Map<string, number>();
  profile.samples.forEach((sampleId, k) => {
    const { functionName, url, lineNumber } = byId.get(sampleId)!.callFrame;
    // The bundle's functions by their source file; the runtime's own (node:zlib, say) by their URL.
    const where = url === "" ? "" : /(^|\/)index\.js$/.test(url) ? ` ${fileOf(lineNumber)}` : ` ${url}`;
    const key = `${functionName || "(anonymous)"}${where}`;
    times.set(key, (times.get(key) ?? 0) + (profile.timeDeltas[k] ?? 0));
  });
  return [...times].sort((a, b) => b[1] - a[1]);
}

mkdirSync(scratch, { recursive: true });
const up = await startUpstream({ resources: [{ id, shape: BASE, rows }] });
try {
  const built = buildWorker(root, scratch);
  const vars = benchVars(up.url, { base: id });
  const worker = await startWrangler({ root, ...built, vars, persistTo: join(scratch, "state") });
  try {
    const link = `${worker.url}/export.${format}?resource=base&limit=${rows}`;
    // Compiled first, so the profile is of the code as it runs once warm.
    await download(`${worker.url}/export.${format}?resource=base&limit=70000`, {}, () => () => {});
    const devtools = await inspector(worker.inspectorPort);
    await devtools.call("Profiler.enable");
    await devtools.call("Profiler.setSamplingInterval", { interval: 500 });
    await devtools.call("Profiler.start");
    const got = await download(link, {}, () => () => {});
    const { profile } = await devtools.call<{ profile: Profile }>("Profiler.stop");
    devtools.close();
    if (got.status !== 200) throw new Error(`the ${format} export answered HTTP ${got.status}`);
    const out = join(root, "bench", "tmp", `${format}.cpuprofile`);
    writeFileSync(out, JSON.stringify(profile));
    const times = selfTimes(profile, sourceFiles(built.bundle));
    const busy = times.filter(([name]) => !name.startsWith("(idle)")).reduce((sum, [, t]) => sum + t, 0);
    console.log(
      `${format}, ${rows.toLocaleString("en-US")} rows: ${(busy / 1e6).toFixed(2)} s sampled, profile in bench/tmp/${format}.cpuprofile`,
    );
    for (const [name, t] of times.slice(0, top))
      console.log(`${((100 * t) / busy).toFixed(1).padStart(5)}%  ${(t / 1000).toFixed(0).padStart(6)} ms  ${name}`);
  } finally {
    await worker.stop();
  }
} finally {
  await up.close();
  killAllNow();
  rmSync(scratch, { recursive: true, force: true });
}
