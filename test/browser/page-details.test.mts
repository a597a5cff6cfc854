// The link-builder page's details, in headless Chromium against the worker in `wrangler dev` and the
// CKAN emulator: numbers in the preview exactly as the export writes them, the health banner for each
// answer of GET /health, the favicon, disabled buttons that look disabled, and the parameter
// reference's code.
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import Papa from "papaparse";
import type { Browser, Page, Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulatorServer } from "../../emulator/server.ts";
import {
  cleanUp,
  findBrowser,
  launchChromium,
  NO_BROWSER,
  settledPreview,
  startWorker,
  type WorkerProcess,
} from "./harness.mts";

const ARTIFACTS = fileURLToPath(new URL("./artifacts/", import.meta.url));
const skip = findBrowser() === undefined && process.env.CI !== "true";
if (skip) process.stderr.write(`test/browser: ${NO_BROWSER}\n`);

describe.skipIf(skip)("the link-builder page's details, in headless Chromium", () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  let browser: Browser;
  let worker: WorkerProcess;

  beforeAll(async () => {
    browser = await launchChromium();
    cleanups.push(() => browser.close());
    const emulator = await startEmulatorServer({ port: 0 });
    cleanups.push(() => emulator.close());
    worker = await startWorker({ vars: { CKAN_BASE_URL: `${emulator.url}/data/en`, CKAN_API_TOKEN: "demo-token" } });
    cleanups.push(() => worker.stop());
    mkdirSync(ARTIFACTS, { recursive: true });
  }, 180_000);

  afterAll(() => cleanUp(cleanups), 30_000);

  /** The page with `health` answering GET /health, and every answer of 400 or more it received. */
  async function open(health?: (route: Route) => Promise<void>): Promise<{ page: Page; failed: string[] }> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const failed: string[] = [];
    page.on(
      "response",
      (response) => void (response.status() >= 400 && failed.push(`${response.status()} ${response.url()}`)),
    );
    if (health) await page.route("**/health", health);
    await page.goto(`${worker.url}/`);
    await page.waitForSelector("#col-name", { timeout: 30_000 });
    return { page, failed };
  }

  const answer = (status: number, body: unknown) => (route: Route) =>
    route.fulfill({ status, contentType: "application/json", body: JSON.stringify(body) });
  const healthy = answer(200, {
    ok: true,
    ckan: { base: "https://ckan.example.org/data/en", reachable: true, version: "2.12.0" },
    problems: [],
  });
  const banner = (page: Page) =>
    page.$eval("#health", (e) => ({
      shown: !(e as HTMLElement).hidden && e.getBoundingClientRect().height > 0,
      text: e.textContent ?? "",
      items: [...e.querySelectorAll("li")].map((li) => li.textContent),
    }));

  it("previews the edge table's numbers as CKAN wrote them, cell for cell the CSV export's text", async () => {
    const { page } = await open();
    try {
      await page.selectOption("#resource", "edge");
      await page.waitForSelector("#col-meta");
      for (const column of ["id", "amount", "ratio", "meta"]) await page.check(`#col-${column}`);
      await page.fill("#limit", "12");
      await settledPreview(page);
      const shown = await page.$$eval("#preview tbody tr", (trs) =>
        trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "")),
      );
      const csv = await (await fetch(`${worker.url}/export.csv?resource=edge&fields=id,amount,ratio&limit=12`)).text();
      const rows = Papa.parse<string[]>(csv.trimEnd(), { newline: "\r\n" }).data.slice(1);
      expect(shown.map((cells) => cells.slice(0, 3))).toEqual(rows);
      // Row 4: a 29-digit numeric, and json whose integer has 20 digits and whose 2.5 and 1.0 stay so.
      expect(shown[3]![1]).toBe("12345678901234567890.123456789");
      expect(shown[3]![3]).toContain('"big":12345678901234567890}');
      expect(shown[0]![3]).toContain('"f":1.0,');
      expect(await page.textContent("#warnings")).toBe("");
    } finally {
      await page.close();
    }
  });

  it("shows no health banner when /health answers 200 ok, nor when it is gated (403)", async () => {
    for (const health of [healthy, answer(403, { error: { status: 403, message: "Forbidden" } })]) {
      const { page } = await open(health);
      try {
        await page.waitForTimeout(300);
        expect(await banner(page)).toEqual({ shown: false, text: "", items: [] });
      } finally {
        await page.close();
      }
    }
  });

  it("shows no banner against this worker's own /health, which CKAN answers as healthy", async () => {
    const { page } = await open();
    try {
      const health = await page.evaluate(async () => (await fetch("/health")).status);
      expect(health).toBe(200);
      expect((await banner(page)).shown).toBe(false);
    } finally {
      await page.close();
    }
  });

  it("lists a snapshot run in progress, with how far it got, and a last run that failed, beside the table's snapshots", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await page.route(
        "**/snapshots",
        answer(200, {
          jobs: [
            {
              name: "sample-daily",
              query: { resource: "sample" },
              latest: {},
              last_run: {
                status: "failed",
                stamp: "20261124T030000Z",
                started: "2026-11-24T03:00:00.000Z",
                finished: "2026-11-24T03:20:00.000Z",
                error: "csv: CKAN answered HTTP 503.",
              },
              running: {
                instance: "sample-daily-20261125T030000Z",
                job: "sample-daily",
                stamp: "20261125T030000Z",
                trigger: "cron",
                status: "running",
                started: "2026-11-25T03:00:00.000Z",
                updated: "2026-11-25T03:05:00.000Z",
                format: "csv",
                step: 3,
                rows: 64000,
                bytes: 8388608,
                parts: 1,
                done: [],
                last_error: null,
              },
            },
          ],
          problems: [],
        }),
      );
      await page.goto(`${worker.url}/`);
      await page.waitForFunction(
        () => document.querySelector("#snapshots")?.textContent?.includes("running since"),
        undefined,
        { timeout: 30_000 },
      );
      const items = await page.$$eval("#snapshots li", (lis) =>
        lis.map((li) => ({ text: li.textContent ?? "", className: li.className })),
      );
      expect(items).toHaveLength(2);
      expect(items[0]!.text).toMatch(/^sample-daily: running since .+ \(csv, step 3: 64,000 rows, 8 MiB so far\)$/);
      expect(items[0]!.className).toBe("note");
      expect(items[1]).toEqual({
        text: "sample-daily: the last run failed: csv: CKAN answered HTTP 503.",
        className: "warning",
      });
    } finally {
      await page.close();
    }
  });

  it("shows a banner naming each problem when /health answers 503, and a generic one when it cannot be reached", async () => {
    const problems = [
      "CKAN did not answer at https://ckan.example.org/data/en: connection refused",
      "CKAN_API_TOKEN is set but CKAN does not accept it",
    ];
    const down = await open(
      answer(503, {
        ok: false,
        ckan: { base: "https://ckan.example.org/data/en", reachable: false, version: null },
        problems,
      }),
    );
    try {
      await down.page.waitForSelector("#health:not([hidden])");
      const shown = await banner(down.page);
      expect(shown.shown).toBe(true);
      expect(shown.text).toContain(
        "This worker reports problems (CKAN at https://ckan.example.org/data/en): exports may fail until they are fixed.",
      );
      expect(shown.items).toEqual(problems);
      await down.page.screenshot({
        path: `${ARTIFACTS}builder-health-banner.png`,
        clip: { x: 0, y: 0, width: 1280, height: 700 },
      });
    } finally {
      await down.page.close();
    }
    const unreachable = await open((route) => route.abort("connectionrefused"));
    try {
      await unreachable.page.waitForSelector("#health:not([hidden])");
      expect((await banner(unreachable.page)).text).toContain("The worker did not answer GET /health");
    } finally {
      await unreachable.page.close();
    }
  });

  it("has a favicon (no answer of 400 or more while the page loads), grey disabled buttons and code in its reference", async () => {
    const { page, failed } = await open(healthy);
    try {
      await page.waitForSelector("#reference dd code");
      const icon = await fetch(`${worker.url}/favicon.ico`);
      expect(icon.status).toBe(200);
      expect(icon.headers.get("content-type")).toMatch(/^image\//);
      // An ICO file's header: reserved 0, type 1 (icon).
      expect([...new Uint8Array(await icon.arrayBuffer()).subarray(0, 4)]).toEqual([0, 0, 1, 0]);
      const icons = await page.$$eval('link[rel="icon"]', (links) => links.map((l) => (l as HTMLLinkElement).href));
      expect(icons.map((href) => new URL(href).pathname)).toEqual(["/favicon.svg", "/favicon.ico"]);
      for (const href of icons) expect((await fetch(href)).headers.get("content-type")).toMatch(/^image\//);
      expect(failed).toEqual([]);

      // Nothing ticked: every ↑/↓ is disabled and must not look like the enabled ones.
      await page.check("#col-name");
      const style = (selector: string) =>
        page.$eval(selector, (e) => ({
          color: getComputedStyle(e).color,
          border: getComputedStyle(e).borderColor,
          cursor: getComputedStyle(e).cursor,
        }));
      const enabled = await style('button[aria-label="Move name up"]');
      const disabled = await style('button[aria-label="Move id up"]');
      expect(await page.isDisabled('button[aria-label="Move id up"]')).toBe(true);
      expect(disabled.cursor).toBe("not-allowed");
      expect(disabled.color).not.toBe(enabled.color);
      expect(disabled.border).not.toBe(enabled.border);

      // The reference's `backticks` are code elements, not literal backticks.
      const reference = await page.$$eval("#reference dd", (dds) =>
        dds.map((dd) => ({
          text: dd.textContent ?? "",
          code: [...dd.querySelectorAll("code")].map((c) => c.textContent),
        })),
      );
      expect(reference.filter((dd) => dd.text.includes("`"))).toEqual([]);
      const resource = reference.find((dd) => dd.code.includes("RESOURCES"));
      expect(resource?.code).toContain("/export.csv?resource=sample");
    } finally {
      await page.close();
    }
  });
});
