// Helpers for specs that run in Node and drive a real browser: the worker in `wrangler dev`
// (workerd, exactly as `npm start` runs it; started by test/http/harness.mts), tiny pages on their
// own loopback origins, and Debian's Chromium through playwright-core. Everything listens on
// 127.0.0.1 only.
import { existsSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { delimiter, join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";

// Starting `wrangler dev` is shared with the wire specs (test/http).
export { freePort, startWorker, type StartWorkerOptions, type WorkerProcess } from "../http/harness.mts";

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

/** Runs clean-ups newest first; one failing must not keep the others from running. */
export async function cleanUp(cleanups: Array<() => Promise<unknown>>): Promise<void> {
  const results = await Promise.allSettled(cleanups.reverse().map((cleanup) => cleanup()));
  const failed = results.filter((result): result is PromiseRejectedResult => result.status === "rejected");
  if (failed.length > 0)
    throw new AggregateError(
      failed.map((result) => result.reason),
      "clean-up failed",
    );
}

/**
 * Waits for the link builder's preview of the current state. The page marks its count as loading
 * from the change itself (synchronously, in the input's event) until the preview of the new state
 * answers, so waiting for that mark to clear cannot catch an earlier preview, however fast or slow
 * this one is.
 */
export async function settledPreview(page: Page): Promise<void> {
  await page.waitForFunction(
    () => {
      const state = document.getElementById("count")?.dataset.state;
      return state === "done" || state === "failed";
    },
    undefined,
    { timeout: 30_000 },
  );
}
