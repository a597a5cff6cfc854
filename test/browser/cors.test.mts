// CORS for dashboards, in a real browser: a page on an allowed origin fetches /export.json from the
// worker (in workerd, through `wrangler dev`) and renders its rows; a page on an origin that is not
// in CORS_ALLOW_ORIGINS is refused by the browser. Runs in Node, not in workerd (see vitest.config.ts).
import type { Browser, ConsoleMessage } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulatorServer } from "../../emulator/server.ts";
import { EMULATOR_RESOURCES } from "../../emulator/index.ts";
import {
  cleanUp,
  findBrowser,
  launchChromium,
  NO_BROWSER,
  servePage,
  startWorker,
  type Site,
  type WorkerProcess,
} from "./harness.mts";

const EXPORT_PATH = "/export.json?resource=sample&limit=5&fields=id,name";

/** What a dashboard does with the JSON link: fetch it, show the rows, or show why it could not. */
function dashboardPage(exportUrl: string): string {
  return `<!doctype html>
<html lang="en">
<meta charset="utf-8">
<title>Dashboard</title>
<p id="status">loading</p>
<p>Matching rows: <span id="total"></span></p>
<table id="rows">
  <thead><tr><th>id</th><th>name</th></tr></thead>
  <tbody></tbody>
</table>
<script type="module">
  const status = document.getElementById("status");
  try {
    const response = await fetch(${JSON.stringify(exportUrl)});
    if (!response.ok) throw new Error("HTTP " + response.status);
    document.getElementById("total").textContent = response.headers.get("X-Total-Count") ?? "(hidden)";
    const records = await response.json();
    const body = document.querySelector("#rows tbody");
    for (const record of records) {
      const tr = document.createElement("tr");
      for (const field of ["id", "name"]) {
        const td = document.createElement("td");
        td.textContent = String(record[field]);
        tr.append(td);
      }
      body.append(tr);
    }
    status.textContent = "ok";
  } catch (error) {
    status.textContent = "error: " + error.name + ": " + error.message;
  }
  status.dataset.done = "true";
</script>
</html>
`;
}

interface Rendered {
  status: string;
  total: string;
  rows: string[][];
  console: string[];
}

// A machine without a browser skips this, saying why in one line; CI must have one and fails instead.
const skip = findBrowser() === undefined && process.env.CI !== "true";
if (skip) process.stderr.write(`test/browser: ${NO_BROWSER}\n`);

describe.skipIf(skip)("CORS for dashboards, in headless Chromium", () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  let worker: WorkerProcess;
  let allowed: Site;
  let refused: Site;
  let browser: Browser;
  /** The first rows and the total as CKAN itself (the emulator) gives them: the expected values. */
  let expected: { records: Array<{ id: unknown; name: unknown }>; total: number };

  beforeAll(async () => {
    // First: without the browser there is nothing to test (and it says so), so start nothing else.
    browser = await launchChromium();
    cleanups.push(() => browser.close());

    const emulator = await startEmulatorServer({ port: 0 });
    cleanups.push(() => emulator.close());

    const search = await fetch(`${emulator.url}/data/en/api/action/datastore_search`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ resource_id: EMULATOR_RESOURCES.sample, limit: 5, fields: ["id", "name"], sort: "_id" }),
    });
    expected = ((await search.json()) as { result: typeof expected }).result;

    // Both pages need the worker's URL, which is known only once it runs, and the worker needs the
    // allowed page's origin: the pages are rendered per request.
    let exportUrl = "";
    allowed = await servePage(() => dashboardPage(exportUrl));
    cleanups.push(() => allowed.close());
    refused = await servePage(() => dashboardPage(exportUrl));
    cleanups.push(() => refused.close());

    worker = await startWorker({
      vars: {
        CKAN_BASE_URL: `${emulator.url}/data/en`,
        // A list, so the worker must echo the caller's origin rather than answer "*".
        CORS_ALLOW_ORIGINS: `${allowed.origin},https://dash.example`,
      },
    });
    cleanups.push(() => worker.stop());
    exportUrl = `${worker.url}${EXPORT_PATH}`;
  }, 120_000);

  afterAll(() => cleanUp(cleanups), 30_000);

  async function open(site: Site): Promise<Rendered> {
    const page = await browser.newPage();
    const messages: string[] = [];
    page.on("console", (message: ConsoleMessage) => void messages.push(message.text()));
    try {
      await page.goto(`${site.origin}/`);
      await page.waitForSelector("#status[data-done]", { timeout: 30_000 });
      return {
        status: (await page.textContent("#status")) ?? "",
        total: (await page.textContent("#total")) ?? "",
        rows: await page.$$eval("#rows tbody tr", (trs) =>
          trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "")),
        ),
        console: messages,
      };
    } finally {
      await page.close();
    }
  }

  it("a page on an allowed origin reads /export.json, renders its rows and sees X-Total-Count", async () => {
    const page = await open(allowed);

    expect(page.status, `page console:\n${page.console.join("\n")}`).toBe("ok");
    expect(page.rows).toEqual(expected.records.map((record) => [String(record.id), String(record.name)]));
    expect(page.rows).toHaveLength(5);
    // Readable only because the worker lists it in Access-Control-Expose-Headers.
    expect(page.total).toBe(String(expected.total));
  });

  it("a page on an origin that is not allowed is refused by the browser and renders nothing", async () => {
    const page = await open(refused);

    expect(page.status).toMatch(/^error: TypeError: /);
    expect(page.rows).toEqual([]);
    expect(page.console.join("\n")).toMatch(/blocked by CORS policy: No 'Access-Control-Allow-Origin' header/);
  });

  it("the headers behind it: echoed origin, Vary, exposed headers, preflight; nothing for other origins", async () => {
    const url = `${worker.url}${EXPORT_PATH}`;

    const ok = await fetch(url, { headers: { origin: allowed.origin } });
    await ok.body?.cancel();
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBe(allowed.origin);
    expect(ok.headers.get("vary") ?? "").toMatch(/\bOrigin\b/i);
    expect(ok.headers.get("access-control-expose-headers") ?? "").toMatch(/\bX-Total-Count\b/i);
    expect(ok.headers.get("access-control-expose-headers") ?? "").toMatch(/\bContent-Disposition\b/i);

    const preflight = await fetch(url, {
      method: "OPTIONS",
      headers: { origin: allowed.origin, "access-control-request-method": "GET" },
    });
    await preflight.body?.cancel();
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(allowed.origin);
    expect(preflight.headers.get("access-control-allow-methods") ?? "").toMatch(/\bGET\b.*\bHEAD\b.*\bOPTIONS\b/);
    expect(preflight.headers.get("access-control-max-age")).toMatch(/^\d+$/);

    // No grant for another origin, neither on the read nor on its preflight.
    const other = await fetch(url, { headers: { origin: refused.origin } });
    await other.body?.cancel();
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    const otherPreflight = await fetch(url, {
      method: "OPTIONS",
      headers: { origin: refused.origin, "access-control-request-method": "GET" },
    });
    await otherPreflight.body?.cancel();
    expect(otherPreflight.headers.get("access-control-allow-origin")).toBeNull();
  });
});
