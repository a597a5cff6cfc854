// `wrangler dev` as a measured child: start it in its own process group (so one signal reaches
// wrangler and both workerd processes), find the workerd that runs the user worker, and read that
// process's memory and CPU from /proc.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

export interface ProcSample {
  /** Resident set now, MB. */
  rssMb: number;
  /** Peak resident set since the process started (VmHWM), MB. */
  peakMb: number;
  /** utime + stime, seconds. */
  cpuSeconds: number;
}

export interface Wrangler {
  url: string;
  /** workerd running the user worker (its entry socket is on port 0). */
  workerPid: number;
  /** workerd running wrangler's proxy on the public port: every response byte passes through it too. */
  proxyPid: number;
  /** wrangler's inspector proxy (Chrome DevTools protocol) for the user worker's isolate. */
  inspectorPort: number;
  /** Lines wrangler printed (the worker's console.log included). */
  output: string[];
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();

let clockTick: number | undefined;
function ticksPerSecond(): number {
  if (clockTick === undefined) {
    try {
      clockTick = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      clockTick = 100;
    }
  }
  return clockTick;
}

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses). */
function statFields(pid: number): string[] {
  const text = readFileSync(`/proc/${pid}/stat`, "utf8");
  return text.slice(text.lastIndexOf(")") + 2).split(" ");
}

/** NaN figures once the process has gone (a crash is reported by the caller, not thrown here). */
export function sample(pid: number): ProcSample {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return { rssMb: Number.NaN, peakMb: Number.NaN, cpuSeconds: Number.NaN };
  }
  const kb = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? Number.NaN);
  const stat = statFields(pid);
  // stat fields 14 and 15 (utime, stime) are at 11 and 12 once pid and comm are cut off.
  const cpuSeconds = (Number(stat[11]) + Number(stat[12])) / ticksPerSecond();
  return { rssMb: kb("VmRSS") / 1024, peakMb: kb("VmHWM") / 1024, cpuSeconds };
}

function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      parent.set(Number(name), Number(statFields(Number(name))[1]));
    } catch {
      // The process ended while we looked.
    }
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    for (const [child, ppid] of parent) {
      if (ppid === pid) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}

/** CPU seconds of a process and everything below it that is still running. */
function treeCpuSeconds(root: number): number {
  let total = 0;
  for (const pid of [root, ...descendants(root)]) {
    const cpu = sample(pid).cpuSeconds;
    if (!Number.isNaN(cpu)) total += cpu;
  }
  return total;
}

/** Busy and total CPU seconds of the whole machine, all cores summed, from /proc/stat. */
function machineCpuSeconds(): { busy: number; total: number } {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0); // idle + iowait
  return { busy: (total - idle) / ticksPerSecond(), total: total / ticksPerSecond() };
}

/**
 * Samples, once a second, how much of the machine processes outside this benchmark use: on a shared
 * machine (tests running beside it) that is what makes figures noisy. stop() gives the mean and the
 * worst second, as shares of all cores.
 */
export function watchOtherLoad(): { stop(): { mean: number; worst: number } } {
  let last = { ...machineCpuSeconds(), ours: treeCpuSeconds(process.pid) };
  let other = 0;
  let total = 0;
  let worst = 0;
  const timer = setInterval(() => {
    const now = { ...machineCpuSeconds(), ours: treeCpuSeconds(process.pid) };
    const dt = now.total - last.total;
    // Our processes that ended in this second take their CPU with them: clamp, never below zero.
    const theirs = Math.max(0, now.busy - last.busy - Math.max(0, now.ours - last.ours));
    if (dt > 0) {
      other += theirs;
      total += dt;
      worst = Math.max(worst, theirs / dt);
    }
    last = now;
  }, 1000);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      return { mean: total > 0 ? other / total : 0, worst };
    },
  };
}

function argv(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  } catch {
    return [];
  }
}

/** The two `workerd serve` processes wrangler starts, told apart by their entry socket. */
function findWorkerd(root: number, port: number): { workerPid: number; proxyPid: number } | undefined {
  let workerPid: number | undefined;
  let proxyPid: number | undefined;
  for (const pid of descendants(root)) {
    const args = argv(pid);
    if (!args[0]?.endsWith("workerd") || args[1] !== "serve") continue;
    if (args.includes("--socket-addr=entry=127.0.0.1:0")) workerPid = pid;
    else if (args.includes(`--socket-addr=entry=127.0.0.1:${port}`)) proxyPid = pid;
  }
  return workerPid !== undefined && proxyPid !== undefined ? { workerPid, proxyPid } : undefined;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits until the process stops using CPU, so work after the response (logs, cache writes) is counted. */
export async function settle(pid: number): Promise<void> {
  for (let i = 0; i < 40; i++) {
    const before = sample(pid).cpuSeconds;
    await sleep(250);
    const after = sample(pid).cpuSeconds;
    if (Number.isNaN(after) || after - before < 0.02) return;
  }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

/** Last resort on exit: synchronous, so it also runs from process.on("exit"). */
export function killAllNow(): void {
  for (const child of live) killGroup(child, "SIGKILL");
  live.clear();
}

export interface WranglerOptions {
  root: string;
  /** A wrangler config other than the project's. */
  config?: string;
  /** An already bundled entry, served as it is (so edits to the sources cannot reload the worker mid-run). */
  bundle?: string;
  vars: Record<string, string>;
  /** A fresh directory per process: wrangler's local cache persists there, and "cold" must be cold. */
  persistTo: string;
  /** V8 flags for workerd (wrangler passes MINIFLARE_WORKERD_V8_FLAGS on). */
  v8Flags?: string;
}

/**
 * The export worker's settings in a bench run: `upstream` as CKAN, `resources` as its aliases, no
 * snapshot jobs, the edge cache off (see bench/run.ts), at most `maxRows` rows; `more` added or overriding.
 */
export function benchVars(
  upstream: string,
  resources: Record<string, string>,
  more: Record<string, string> = {},
): Record<string, string> {
  return {
    CKAN_BASE_URL: upstream,
    MAX_ROWS: "2000000",
    RESOURCES: JSON.stringify(resources),
    SNAPSHOT_JOBS: "[]",
    CACHE_TTL_SECONDS: "0",
    ...more,
  };
}

/**
 * `wrangler dev` on free ports, started again (up to three times) where one was taken between
 * `freePort` finding it and workerd binding it: another process's socket took it (Miniflare's
 * internal sockets ask for any free port), as happened once in a whole run of the bench.
 */
export async function startWrangler(options: WranglerOptions): Promise<Wrangler> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startWranglerOnce(options);
    } catch (error) {
      if (attempt >= 3 || !/Address already in use/.test(String(error))) throw error;
    }
  }
}

async function startWranglerOnce(options: WranglerOptions): Promise<Wrangler> {
  const [port, inspectorPort] = [await freePort(), await freePort()];
  const args = [
    join(options.root, "node_modules", "wrangler", "bin", "wrangler.js"),
    "dev",
    ...(options.bundle ? [options.bundle, "--no-bundle"] : []),
    ...(options.config ? ["--config", options.config] : []),
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(inspectorPort),
    "--persist-to",
    options.persistTo,
    "--show-interactive-dev-session=false",
    "--log-level",
    "log",
    ...Object.entries(options.vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
  ];
  const child = spawn(process.execPath, args, {
    cwd: options.root,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    // Offline: no Request.cf download, no update check, no telemetry.
    env: {
      ...process.env,
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
      WRANGLER_HIDE_BANNER: "true",
      WRANGLER_SEND_METRICS: "false",
      NO_COLOR: "1",
      FORCE_COLOR: "0",
      MINIFLARE_WORKERD_V8_FLAGS: options.v8Flags ?? "",
    },
  });
  live.add(child);
  const output: string[] = [];
  let ready = false;
  const collect = (data: Buffer): void => {
    for (const line of data.toString().split("\n")) {
      if (line.trim() === "") continue;
      output.push(line);
      if (output.length > 5000) output.splice(0, 1000);
      if (/Ready on http/.test(line)) ready = true;
    }
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  let exited = false;
  child.once("exit", () => {
    exited = true;
    live.delete(child);
  });

  const stop = async (): Promise<void> => {
    if (!exited) {
      killGroup(child, "SIGTERM");
      for (let i = 0; i < 50 && !exited; i++) await sleep(100);
    }
    // workerd children may outlive wrangler: the group signal reaches them wherever they are.
    killGroup(child, "SIGKILL");
    live.delete(child);
  };

  try {
    const deadline = Date.now() + 90_000;
    let found: { workerPid: number; proxyPid: number } | undefined;
    while (!(ready && (found = findWorkerd(child.pid!, port)))) {
      if (exited) throw new Error(`wrangler dev exited early:\n${output.slice(-30).join("\n")}`);
      if (Date.now() > deadline) throw new Error(`wrangler dev did not become ready:\n${output.slice(-30).join("\n")}`);
      await sleep(100);
    }
    const url = `http://127.0.0.1:${port}`;
    // "Ready" is printed before the user worker answers every time; wait for a real answer.
    for (;;) {
      try {
        await (await fetch(`${url}/`)).arrayBuffer();
        break;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await sleep(100);
      }
    }
    return { url, workerPid: found.workerPid, proxyPid: found.proxyPid, output, inspectorPort, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Bundles the worker once, as `wrangler deploy` would, with a copy of its config: the benchmark then
 * measures one version of the code even while someone edits src/ or wrangler.toml.
 */
export function buildWorker(root: string, outDir: string): { bundle: string; config: string } {
  const wrangler = join(root, "node_modules", "wrangler", "bin", "wrangler.js");
  execFileSync(process.execPath, [wrangler, "deploy", "--dry-run", "--outdir", join(outDir, "build")], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_HIDE_BANNER: "true", WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
  });
  const config = join(outDir, "wrangler.toml");
  // The copy lives elsewhere: the static assets directory must still name the project's.
  const toml = readFileSync(join(root, "wrangler.toml"), "utf8").replace(
    /^(directory\s*=\s*)"\.\/?([^"]*)"/m,
    (_, key: string, dir: string) => `${key}${JSON.stringify(join(root, dir))}`,
  );
  writeFileSync(config, toml);
  return { bundle: join(outDir, "build", "index.js"), config };
}

/** The worker's last `lines` lines of output, for a failure's message (paths of this machine, under `root`, cut out). */
export const lastWords = (worker: Wrangler, root: string, lines: number): string =>
  worker.output
    .slice(-lines)
    .map((l) =>
      l
        .replace(/\x1b\[[0-9;]*m/g, "")
        .split(root)
        .join("")
        .slice(0, 240),
    )
    .join(" | ");
