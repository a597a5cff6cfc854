// Helpers for specs that run in Node against the worker in `wrangler dev` (workerd, exactly as
// `npm start` runs it) and read what crosses the wire. Everything listens on 127.0.0.1 only.
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, get, type IncomingHttpHeaders } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { OFFLINE_WRANGLER } from "../../scripts/offline.ts";

const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The demo's configuration (the emulator's resources); the operator's wrangler.toml is not the specs'. */
export const DEMO_CONFIG = join(PROJECT_ROOT, "demo", "wrangler.toml");

/**
 * The environment of a `wrangler dev` that sees none of the developer's local settings: wrangler
 * would hand the worker every variable of the process with CLOUDFLARE_INCLUDE_PROCESS_ENV, and
 * CLOUDFLARE_ENV would pick another environment of the config.
 */
export function isolatedEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...OFFLINE_WRANGLER, NO_COLOR: "1", FORCE_COLOR: "0" };
  delete env["CLOUDFLARE_INCLUDE_PROCESS_ENV"];
  delete env["CLOUDFLARE_ENV"];
  return env;
}

/** A port nobody listens on right now (the kernel picks it; a small race is acceptable in tests). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface WorkerProcess {
  /** e.g. http://127.0.0.1:40125, no trailing slash */
  url: string;
  /** Everything wrangler printed so far, for failure messages. */
  output(): string;
  stop(): Promise<void>;
}

export interface StartWorkerOptions {
  /** `--var NAME:value` pairs */
  vars: Record<string, string>;
  /** More `wrangler dev` flags, e.g. `--test-scheduled` (as `npm start` passes it). */
  flags?: string[];
  /** How long `wrangler dev` may take to print "Ready on". */
  timeoutMs?: number;
  /** The wrangler config (default: the demo's, demo/wrangler.toml). */
  config?: string;
  /**
   * "ignore" (the default, and what every spec wants): the worker gets the config's vars and `vars`,
   * never a .dev.vars or .env. "read" lets wrangler read them as it would by itself, only so a spec
   * can show what ignoring them prevents.
   */
  localSettings?: "ignore" | "read";
  /** V8 flags for workerd, e.g. a heap cap (`--max-old-space-size=24`): wrangler dev sets none. */
  v8Flags?: string;
}

/**
 * `wrangler dev` as a child process in its own process group (so stop() also ends workerd), with
 * local state in a throw-away directory. Resolves once wrangler prints "Ready on". Started again (up
 * to three times) where a port was taken between `freePort` finding it and workerd binding it by
 * another process's socket, as bench/workerd.ts has also met: a CI run failed once on "Address
 * already in use" while other wrangler devs started on the machine.
 */
export async function startWorker(options: StartWorkerOptions): Promise<WorkerProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startWorkerOnce(options);
    } catch (error) {
      if (attempt >= 3 || !/Address already in use/.test(String(error))) throw error;
    }
  }
}

async function startWorkerOnce(options: StartWorkerOptions): Promise<WorkerProcess> {
  const require = createRequire(import.meta.url);
  const wrangler = join(dirname(require.resolve("wrangler/package.json")), "bin", "wrangler.js");
  const [port, inspectorPort] = [await freePort(), await freePort()];
  const state = await mkdtemp(join(tmpdir(), "datastore-export-wrangler-"));
  // With --env-file wrangler reads that file instead of .dev.vars and .env: an empty one gives the
  // worker exactly the config's vars and the spec's --var pairs, whatever the developer keeps locally.
  const noLocalSettings = join(state, "empty.env");
  await writeFile(noLocalSettings, "");
  const args = [
    wrangler,
    "dev",
    "--config",
    options.config ?? DEMO_CONFIG,
    ...(options.localSettings === "read" ? [] : ["--env-file", noLocalSettings]),
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(inspectorPort),
    "--persist-to",
    state,
    "--show-interactive-dev-session=false",
    ...Object.entries(options.vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
    ...(options.flags ?? []),
  ];
  const child = spawn(process.execPath, args, {
    cwd: PROJECT_ROOT,
    env:
      options.localSettings === "read"
        ? {
            ...process.env,
            ...OFFLINE_WRANGLER,
            NO_COLOR: "1",
            FORCE_COLOR: "0",
            MINIFLARE_WORKERD_V8_FLAGS: options.v8Flags ?? "",
          }
        : { ...isolatedEnv(), MINIFLARE_WORKERD_V8_FLAGS: options.v8Flags ?? "" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });

  let output = "";
  const collect = (chunk: Buffer): void => {
    output += chunk.toString();
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);

  let exited = child.exitCode !== null;
  const exit = new Promise<void>((resolve) => {
    child.once("exit", () => {
      exited = true;
      resolve();
    });
    child.once("error", (error) => {
      output += `\n${String(error)}`;
      exited = true;
      resolve();
    });
  });

  const signalGroup = (signal: NodeJS.Signals): void => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // The group is already gone.
    }
  };
  // If this process dies without running afterAll, do not leave workerd behind.
  const onExit = (): void => signalGroup("SIGKILL");
  process.once("exit", onExit);

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      process.off("exit", onExit);
      signalGroup("SIGTERM");
      const gone = await Promise.race([exit.then(() => true), delay(5_000).then(() => false)]);
      // wrangler may exit before workerd does: always finish the whole group.
      signalGroup("SIGKILL");
      if (!gone) await Promise.race([exit, delay(2_000)]);
      await rm(state, { recursive: true, force: true });
    })());

  const timeoutMs = options.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  while (!/Ready on/i.test(output)) {
    if (exited || Date.now() > deadline) {
      await stop();
      const why = exited ? `exited (code ${child.exitCode ?? "none"})` : `was not ready after ${timeoutMs / 1000} s`;
      throw new Error(`wrangler dev ${why} before printing "Ready on". Its output:\n${output}`);
    }
    await delay(100);
  }
  return { url: `http://127.0.0.1:${port}`, output: () => output, stop };
}

/** One response as Node's own HTTP client (not fetch) saw it on the wire. */
export interface WireResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** Every body byte that arrived, whether or not the transfer completed. */
  body: Buffer;
  /**
   * Node's verdict on the framing: true only when the message ended as announced (the chunked
   * encoding's last chunk, or all of Content-Length). A transfer cut short is false.
   */
  complete: boolean;
  /** The response emitted 'aborted': the connection closed before the message was complete. */
  aborted: boolean;
  /** The response's 'error' for a transfer cut short (Node: ECONNRESET, "aborted"). */
  error?: { code: string | undefined; message: string };
}

/**
 * GET with node:http on a fresh connection, reading the body to its end or to its breakage; resolves
 * either way (rejects only when no response arrives, or after `timeoutMs`).
 */
export function getRaw(
  url: string,
  options: { headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<WireResponse> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  return new Promise((resolve, reject) => {
    const request = get(url, { agent: false, headers: options.headers ?? {} }, (res) => {
      const chunks: Buffer[] = [];
      let aborted = false;
      let error: WireResponse["error"];
      res.on("data", (chunk: Buffer) => void chunks.push(chunk));
      res.on("aborted", () => void (aborted = true));
      res.on("error", (e: NodeJS.ErrnoException) => void (error = { code: e.code, message: e.message }));
      res.on("close", () => {
        clearTimeout(timer);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks),
          complete: res.complete,
          aborted,
          ...(error === undefined ? {} : { error }),
        });
      });
    });
    const timer = setTimeout(
      () => request.destroy(new Error(`no complete answer from ${url} within ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
    request.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
