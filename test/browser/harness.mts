// Helpers for specs that run in Node and drive a real browser: the worker in `wrangler dev`
// (workerd, exactly as `npm start` runs it), tiny pages on their own loopback origins, and
// Debian's Chromium through playwright-core. Everything listens on 127.0.0.1 only.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser } from "playwright-core";

import { OFFLINE_WRANGLER } from "../../scripts/offline.ts";

const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * A Chrome or Chromium this machine already has, found the way a newcomer's machine has one:
 * `CHROME_PATH`, a browser on PATH (Debian's `chromium`, `google-chrome`, ...), the usual install
 * places on macOS and Windows, or one Playwright downloaded earlier. Undefined when there is none.
 */
export function findBrowser(): string | undefined {
  const fromEnv = process.env.CHROME_PATH;
  if (fromEnv !== undefined && fromEnv !== "") return existsSync(fromEnv) ? fromEnv : undefined;
  const names = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"];
  const onPath = (process.env.PATH ?? "").split(delimiter).flatMap((dir) => names.map((name) => join(dir, name)));
  const installed = [
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    join(process.env.PROGRAMFILES ?? "C:\\Program Files", "Google", "Chrome", "Application", "chrome.exe"),
  ];
  let playwrights: string[] = [];
  try {
    playwrights = [chromium.executablePath()];
  } catch {
    // playwright-core knows no browser of its own here.
  }
  return [...onPath, ...installed, ...playwrights].find((path) => existsSync(path));
}

/** Why a browser spec cannot run, in one line. */
export const NO_BROWSER =
  "no Chrome or Chromium found (set CHROME_PATH, or install one, e.g. apt-get install chromium); the browser specs are skipped";

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

export interface Site {
  /** e.g. http://127.0.0.1:40123, no trailing slash */
  origin: string;
  close(): Promise<void>;
}

/**
 * Serves one HTML page at `/` (everything else is a 404) on its own loopback origin. `html` may be
 * a function, called per request, for a page that needs a URL known only after the site is up.
 */
export async function servePage(html: string | (() => string)): Promise<Site> {
  const server = createServer((req, res) => {
    if (req.url === "/" || req.url?.startsWith("/?")) {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
      res.end(typeof html === "function" ? html() : html);
    } else {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not found");
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
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
  /** How long `wrangler dev` may take to print "Ready on". */
  timeoutMs?: number;
}

/**
 * `wrangler dev` as a child process in its own process group (so stop() also ends workerd), with
 * local state in a throw-away directory. Resolves once wrangler prints "Ready on".
 */
export async function startWorker(options: StartWorkerOptions): Promise<WorkerProcess> {
  const require = createRequire(import.meta.url);
  const wrangler = join(dirname(require.resolve("wrangler/package.json")), "bin", "wrangler.js");
  const [port, inspectorPort] = [await freePort(), await freePort()];
  const state = await mkdtemp(join(tmpdir(), "datastore-export-browser-"));
  const args = [
    wrangler, "dev",
    "--ip", "127.0.0.1",
    "--port", String(port),
    "--inspector-port", String(inspectorPort),
    "--persist-to", state,
    "--show-interactive-dev-session=false",
    ...Object.entries(options.vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
  ];
  const child = spawn(process.execPath, args, {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...OFFLINE_WRANGLER, NO_COLOR: "1", FORCE_COLOR: "0" },
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

/** The machine's Chrome or Chromium (see findBrowser), headless. */
export async function launchChromium(): Promise<Browser> {
  const executablePath = findBrowser();
  if (executablePath === undefined) throw new Error(NO_BROWSER);
  return chromium.launch({
    executablePath,
    // Without the background-networking flags Chromium keeps trying to reach Google's services,
    // which an offline machine refuses; the page under test only talks to loopback.
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    timeout: 60_000,
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
