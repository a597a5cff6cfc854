// The link-builder page in headless Chromium, against the worker in `wrangler dev` (as `npm start`
// runs it) and the CKAN emulator: build a filtered link, read its preview and count, download it and
// compare with the same export fetched directly; the signed-link flow with the admin token; and
// screenshots at desktop and phone widths (test/browser/artifacts/, not committed).
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import Papa from "papaparse";
import type { Browser, Page } from "playwright-core";
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
const ADMIN = "builder-admin-token";

const skip = findBrowser() === undefined && process.env.CI !== "true";
if (skip) process.stderr.write(`test/browser: ${NO_BROWSER}\n`);

describe.skipIf(skip)("the link-builder page, in headless Chromium", () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  let browser: Browser;
  let worker: WorkerProcess;
  let signing: WorkerProcess;

  beforeAll(async () => {
    browser = await launchChromium();
    cleanups.push(() => browser.close());
    const emulator = await startEmulatorServer({ port: 0 });
    cleanups.push(() => emulator.close());
    const vars = { CKAN_BASE_URL: `${emulator.url}/data/en`, CKAN_API_TOKEN: "demo-token" };
    [worker, signing] = await Promise.all([
      // Fewer than the 20,002 rows the spec filters, so a link without a limit gets the page's warning.
      startWorker({ vars: { ...vars, MAX_ROWS: "10000" } }),
      startWorker({ vars: { ...vars, LINK_SIGNING_KEY: "builder-signing-key-0123456789abcdef", ADMIN_TOKEN: ADMIN } }),
    ]);
    cleanups.push(
      () => worker.stop(),
      () => signing.stop(),
    );
    mkdirSync(ARTIFACTS, { recursive: true });
  }, 180_000);

  afterAll(() => cleanUp(cleanups), 30_000);

  async function build(page: Page): Promise<void> {
    await page.goto(`${worker.url}/`);
    await page.waitForSelector("#col-name", { timeout: 30_000 });
    await page.selectOption("#resource", "sample");
    await page.waitForSelector("#col-name");
    await page.check("#col-id");
    await page.check("#col-name");
    await page.click("#add-filter");
    await page.selectOption("#filter-0-column", "category");
    // category has five values: the page offers them as a list.
    expect(await page.$$eval("#filter-0-value option", (options) => options.map((o) => o.textContent))).toEqual([
      "Value…",
      "alpha",
      "beta",
      "delta",
      "epsilon",
      "gamma",
    ]);
    await page.selectOption("#filter-0-value", "beta");
    await page.fill("#limit", "300");
    await settledPreview(page);
  }

  it("builds a filtered CSV link whose preview, count and download match the export fetched directly", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: worker.url });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => void errors.push(error.message));
    try {
      await build(page);
      const direct = "/export.csv?resource=sample&fields=id,name&filter.category=beta&limit=300";
      const link = await page.inputValue("#link");
      expect(link).toBe(`${worker.url}${direct}`);

      const json = await fetch(
        `${worker.url}/export.json?resource=sample&fields=id,name&filter.category=beta&limit=20`,
      );
      const expectedRows = (await json.json()) as Array<{ id: number; name: string | null }>;
      const total = Number(json.headers.get("x-total-count"));
      expect(total).toBeGreaterThan(15_000);
      expect(await page.getAttribute("#count", "data-total")).toBe(String(total));
      expect(await page.textContent("#count")).toBe(`${total.toLocaleString("en")} matching rows`);
      // Headed with the names the picker shows (the data dictionary's labels), the ids on hover.
      expect(
        await page.$$eval("#preview thead th", (ths) => ths.map((th) => [th.textContent, th.getAttribute("title")])),
      ).toEqual([
        ["Grant number", "id"],
        ["Recipient", "name"],
      ]);
      const shown = await page.$$eval("#preview tbody tr", (trs) =>
        trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)),
      );
      expect(shown).toEqual(expectedRows.map((row) => [String(row.id), row.name ?? ""]));

      await page.screenshot({ path: `${ARTIFACTS}builder-desktop.png`, fullPage: true });
      await page.screenshot({
        path: `${ARTIFACTS}builder-desktop-top.png`,
        clip: { x: 0, y: 0, width: 1280, height: 1720 },
        fullPage: true,
      });

      await page.click('button[data-copy="link"]');
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(link);
      expect(await page.textContent("#snippet-sheets")).toBe(`=IMPORTDATA("${link}")`);

      const downloaded = await page.evaluate(async (url) => (await fetch(url)).text(), link);
      const fetched = await (await fetch(`${worker.url}${direct}`)).text();
      expect(downloaded).toBe(fetched);
      const parsed = Papa.parse<string[]>(fetched.trimEnd(), { newline: "\r\n" });
      expect(parsed.data).toHaveLength(301);
      expect(parsed.data[0]).toEqual(["id", "name"]);

      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("warns about semicolons in Google Sheets and, beside the link, about a link the worker's MAX_ROWS refuses", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await build(page);
      expect(await page.textContent("#link-warnings")).toBe("");
      await page.selectOption("#delimiter", ";");
      // A warning (Sheets will not split the rows) looks like one; a note (UTF-8) looks like a note.
      const sheets = page.locator("#snippets .snippet", { has: page.locator("#snippet-sheets") });
      expect(await sheets.locator(".warning").textContent()).toContain(
        'Google Sheets reads only "," or tab-separated data',
      );
      expect(await sheets.locator(".note").count()).toBe(0);
      const excel = page.locator("#snippets .snippet", { has: page.locator("#snippet-excel") });
      expect(await excel.locator(".note").textContent()).toBe("Encoding 65001 is UTF-8: accents arrive intact.");
      expect(await page.textContent("#snippet-excel")).toContain('Delimiter=";", Encoding=65001');
      const look = (selector: string) =>
        page.$eval(selector, (e) => ({
          color: getComputedStyle(e).color,
          background: getComputedStyle(e).backgroundColor,
        }));
      const [warning, note] = [await look("#snippets .warning"), await look("#snippets .note")];
      expect(warning.color).not.toBe(note.color);
      expect(warning.background).not.toBe(note.background);

      // No limit while 20,002 rows match, then a limit above MAX_ROWS: each link would be a 400,
      // and the page says so beside the link before anyone uses it.
      await page.fill("#limit", "");
      await settledPreview(page);
      const total = Number(await page.getAttribute("#count", "data-total"));
      expect(total).toBeGreaterThan(10_000);
      const unlimited = `${total.toLocaleString("en")} rows match and there is no limit, but this worker exports at most 10,000 rows at once: the link would answer 400. Set a limit of 10000 or less, add filters, or export in parts with offset.`;
      expect(await page.textContent("#link-warnings")).toBe(unlimited);
      expect(await page.textContent("#warnings")).toBe(unlimited);
      expect((await fetch(await page.inputValue("#link"))).status).toBe(400);
      for (const [limit, shown] of [
        ["20000", "20,000"],
        ["99999999999999999999", "99,999,999,999,999,999,999"],
      ] as const) {
        await page.fill("#limit", limit);
        expect(await page.textContent("#link-warnings")).toBe(
          `The link asks for up to ${shown} rows, but this worker exports at most 10,000 rows at once: the link would answer 400. Set a limit of 10000 or less, and export the rest in parts with offset.`,
        );
        expect(await page.getAttribute("#link", "aria-invalid")).toBe("true");
        const refused = await fetch(await page.inputValue("#link"));
        expect(refused.status).toBe(400);
        expect(((await refused.json()) as { error: { parameter: string } }).error.parameter).toBe("limit");
      }
      await page.fill("#limit", "10000");
      expect(await page.textContent("#link-warnings")).toBe("");
      expect(await page.getAttribute("#link", "aria-invalid")).toBe("false");
      expect((await fetch(await page.inputValue("#link"), { method: "HEAD" })).status).toBe(200);
    } finally {
      await page.close();
    }
  });

  it("builds a decimal-comma CSV and an XLSX with the data dictionary's labels, whose links the worker serves", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await build(page);
      expect(await page.isDisabled("#decimal")).toBe(true);
      await page.selectOption("#delimiter", ";");
      await page.check("#decimal");
      const csv = new URL(await page.inputValue("#link"));
      expect(csv.searchParams.get("delimiter")).toBe(";");
      expect(csv.searchParams.get("decimal")).toBe(",");
      expect((await fetch(csv)).status).toBe(200);

      await page.check("#format-xlsx");
      await page.check("#labels");
      const xlsx = new URL(await page.inputValue("#link"));
      expect(xlsx.pathname).toBe("/export.xlsx");
      expect(xlsx.searchParams.get("header")).toBe("label");
      expect(xlsx.searchParams.has("decimal")).toBe(false);
      const workbook = await fetch(xlsx);
      expect(workbook.status).toBe(200);
      expect(workbook.headers.get("content-type")).toContain("spreadsheetml");
      expect(await page.textContent("#snippet-excel")).toContain("Excel.Workbook(Web.Contents(");
    } finally {
      await page.close();
    }
  });

  it("builds a Parquet link with labels, served as Parquet, with DuckDB, pandas and Polars snippets", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await build(page);
      await page.check("#format-parquet");
      await page.check("#labels");
      const link = await page.inputValue("#link");
      const url = new URL(link);
      expect(url.pathname).toBe("/export.parquet");
      expect(url.searchParams.get("header")).toBe("label");
      const file = await fetch(url);
      expect(file.status).toBe(200);
      expect(file.headers.get("content-type")).toBe("application/vnd.apache.parquet");
      expect(new TextDecoder().decode((await file.arrayBuffer()).slice(-4))).toBe("PAR1");
      expect(await page.textContent("#snippet-duckdb")).toBe(`SELECT * FROM read_parquet('${link}');`);
      expect(await page.textContent("#snippet-pandas")).toContain(`pd.read_parquet(${JSON.stringify(link)})`);
      expect(await page.textContent("#snippet-polars")).toContain(`pl.read_parquet(${JSON.stringify(link)})`);
      // The parameter reference lists Parquet's own parameter too.
      expect(await page.textContent("#reference")).toContain("numeric");
    } finally {
      await page.close();
    }
  });

  it("never shows the last table's link, count or Copy while the next table's columns load, and resets the sort with its direction", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await build(page);
      expect(await page.isDisabled("#sort-direction")).toBe(true);
      await page.selectOption("#sort-column", "amount");
      // Descending means the largest values first: empty ones last, unless asked otherwise; the page says which.
      expect(
        await page.$$eval("#sort-direction option", (options) =>
          options.map((o) => [o.getAttribute("value"), o.textContent]),
        ),
      ).toEqual([
        ["", "ascending"],
        ["desc nulls last", "descending, empty last"],
        ["desc", "descending, empty first"],
      ]);
      await page.selectOption("#sort-direction", "desc");
      expect(await page.textContent("#sort-note")).toBe(
        "Descending with empty values first (PostgreSQL's order): rows whose Amount (CAD) is empty come before the largest values.",
      );
      expect(new URL(await page.inputValue("#link")).searchParams.get("sort")).toBe("amount desc");
      await page.selectOption("#sort-direction", "desc nulls last");
      expect(await page.textContent("#sort-note")).toBe(
        "Descending with empty values last (sort=… desc nulls last): the largest Amount (CAD) first, rows where it is empty at the end.",
      );
      expect(await page.isVisible("#sort-note")).toBe(true);
      expect(new URL(await page.inputValue("#link")).searchParams.get("sort")).toBe("amount desc nulls last");

      // The edge table's columns are held back until the spec lets them through; its preview too.
      let release = () => {};
      const held = new Promise<void>((resolve) => (release = resolve));
      await page.route("**/resources/edge", async (route) => {
        await held;
        await route.continue();
      });
      const previews: string[] = [];
      page.on("request", (request) => void (request.url().includes("/export.json") && previews.push(request.url())));
      // Picked while the sort's preview is still scheduled: neither it nor its count may land.
      await page.selectOption("#resource", "edge");
      await page.waitForTimeout(1_000);
      const loading = await page.evaluate(() => ({
        link: (document.getElementById("link") as HTMLTextAreaElement).value,
        placeholder: (document.getElementById("link") as HTMLTextAreaElement).placeholder,
        linkDisabled: (document.getElementById("link") as HTMLTextAreaElement).disabled,
        copyDisabled: (document.getElementById("copy-link") as HTMLButtonElement).disabled,
        count: document.getElementById("count")?.textContent,
        countState: document.getElementById("count")?.dataset.state,
        total: document.getElementById("count")?.dataset.total,
        snippets: document.querySelectorAll("#snippets pre, #snippets button").length,
        rows: document.querySelectorAll("#preview tbody tr").length,
        columns: document.querySelectorAll("#columns li").length,
        sort: [
          (document.getElementById("sort-column") as HTMLSelectElement).value,
          (document.getElementById("sort-direction") as HTMLSelectElement).value,
        ],
      }));
      expect(loading).toEqual({
        link: "",
        placeholder: "Loading the table's columns…",
        linkDisabled: true,
        copyDisabled: true,
        count: "Loading the table's columns…",
        countState: "loading",
        total: undefined,
        snippets: 0,
        rows: 0,
        columns: 0,
        sort: ["", ""],
      });
      expect(previews).toEqual([]);
      expect(await page.isDisabled("#sort-direction")).toBe(true);
      expect(await page.isVisible("#sort-note")).toBe(false);

      release();
      await page.waitForSelector("#col-meta");
      await settledPreview(page);
      const total = (await fetch(`${worker.url}/export.json?resource=edge&limit=1`)).headers.get("x-total-count");
      // The table changed; the limit typed stays.
      expect(await page.inputValue("#link")).toBe(`${worker.url}/export.csv?resource=edge&limit=300`);
      expect(await page.isDisabled("#copy-link")).toBe(false);
      expect(await page.getAttribute("#count", "data-state")).toBe("done");
      expect(await page.getAttribute("#count", "data-total")).toBe(total);
      expect(previews.every((url) => new URL(url).searchParams.get("resource") === "edge")).toBe(true);
      expect(await page.inputValue("#sort-direction")).toBe("");
    } finally {
      await page.close();
    }
  });

  it("sorts descending with empty values last: the preview's first amounts are the largest, none empty", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await build(page);
      await page.check("#col-amount");
      await page.selectOption("#sort-column", "amount");
      await page.selectOption("#sort-direction", "desc nulls last");
      await settledPreview(page);
      const link = new URL(await page.inputValue("#link"));
      expect(link.searchParams.get("sort")).toBe("amount desc nulls last");
      const amounts = await page.$$eval("#preview tbody tr", (trs) =>
        trs.map((tr) => tr.querySelectorAll("td")[2]?.textContent ?? ""),
      );
      expect(amounts).toHaveLength(20);
      expect(amounts.filter((a) => a === "")).toEqual([]);
      expect(amounts.map(Number)).toEqual(amounts.map(Number).sort((a, b) => b - a));
      // The same first rows as the worker's own export of that link.
      const csv = Papa.parse<string[]>(
        (
          await (
            await fetch(
              `${link.origin}/export.csv?resource=sample&fields=id,name,amount&filter.category=beta&sort=amount desc nulls last&limit=20`,
            )
          ).text()
        ).trimEnd(),
        { newline: "\r\n" },
      ).data;
      expect(amounts).toEqual(csv.slice(1).map((row) => row[2]));
    } finally {
      await page.close();
    }
  });

  it("on a desktop: the formats on one line in their usual case, one tool's snippet open", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await build(page);
      const formats = await page.$$eval("#formats label", (labels) =>
        labels.map((l) => ({ text: l.textContent, top: Math.round(l.getBoundingClientRect().top) })),
      );
      expect(formats.map((f) => f.text)).toEqual(["CSV", "TSV", "XLSX", "JSON", "NDJSON", "Parquet"]);
      expect(new Set(formats.map((f) => f.top)).size, "format labels on more than one line").toBe(1);

      const open = () =>
        page.$$eval("#snippets details", (all) =>
          all.filter((d) => (d as HTMLDetailsElement).open).map((d) => (d as HTMLElement).dataset.tool),
        );
      expect(await open()).toEqual(["sheets"]);
      expect(await page.isVisible("#snippet-sheets")).toBe(true);
      expect(await page.isVisible("#snippet-pandas")).toBe(false);
      // Opening another tool closes the first, and the choice survives a change of the link.
      await page.click("#snippet-pandas-title");
      expect(await open()).toEqual(["pandas"]);
      await page.fill("#limit", "30");
      expect(await open()).toEqual(["pandas"]);
      expect(await page.textContent("#snippet-pandas")).toContain("limit=30");
      // Eight tools, one open: their block is shorter than the screen (all open, it was 2,000 px).
      const height = await page.$eval("#snippets", (e) => e.getBoundingClientRect().height);
      expect(height, "the snippets' height with one open").toBeLessThan(700);
    } finally {
      await page.close();
    }
  });

  it("reads well on a phone", async () => {
    const context = await browser.newContext({
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
    });
    const page = await context.newPage();
    try {
      await build(page);
      const wide = await page.evaluate(() =>
        [...document.querySelectorAll("body *")]
          .filter((e) => e.getBoundingClientRect().right > 391 && !e.closest(".table-wrap"))
          .map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className}`),
      );
      expect(wide, "elements wider than the phone's screen").toEqual([]);
      // Words broken across lines: each word of the column list and of the preview's headings is on one line.
      const broken = await page.evaluate(() => {
        const out: string[] = [];
        for (const root of document.querySelectorAll("#columns label, #preview th")) {
          const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
          for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
            for (const match of (node.textContent ?? "").matchAll(/\S+/g)) {
              const range = document.createRange();
              range.setStart(node, match.index);
              range.setEnd(node, match.index + match[0].length);
              const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
              if (lines.size > 1) out.push(match[0]);
            }
          }
        }
        return out;
      });
      expect(broken, "words broken mid-word").toEqual([]);
      expect(await page.$$eval("#columns .type", (types) => types.map((t) => t.textContent).sort())).toEqual([
        "bool",
        "float8",
        "int4",
        "numeric",
        "text",
        "text",
        "text",
        "text",
        "timestamp",
      ]);
      // The column list is part of the page, not a scroll box inside it: every column in view by scrolling the page.
      const list = await page.$eval("#columns", (e) => ({
        overflow: getComputedStyle(e).overflowY,
        scroll: e.scrollHeight,
        client: e.clientHeight,
      }));
      expect(list.overflow).toBe("visible");
      expect(list.scroll).toBeLessThanOrEqual(list.client);
      // The preview's headings fit their cells.
      const cut = await page.$$eval("#preview th", (ths) =>
        ths.filter((th) => th.scrollWidth > th.clientWidth).map((th) => th.textContent),
      );
      expect(cut, "preview headings cut").toEqual([]);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      // The whole link is in view: wrapped inside its box, nothing scrolled away either way.
      const link = await page.$eval("#link", (e) => ({
        text: (e as HTMLTextAreaElement).value,
        width: [e.scrollWidth, e.clientWidth],
        height: [e.scrollHeight, e.clientHeight],
        right: e.getBoundingClientRect().right,
      }));
      expect(link.text.length).toBeGreaterThan(80);
      expect(link.width[0]).toBeLessThanOrEqual(link.width[1]!);
      expect(link.height[0]).toBeLessThanOrEqual(link.height[1]!);
      expect(link.right).toBeLessThanOrEqual(390);
      await page.screenshot({ path: `${ARTIFACTS}builder-phone.png`, fullPage: true });
      await page.locator("#preview-title").scrollIntoViewIfNeeded();
      await page.screenshot({ path: `${ARTIFACTS}builder-phone-preview.png` });
      await page.evaluate(() => document.getElementById("output-title")?.scrollIntoView());
      await page.screenshot({ path: `${ARTIFACTS}builder-phone-link.png` });
    } finally {
      await context.close();
    }
  });

  it("with signing on, an operator enters the admin token and gets a signed link that works", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await page.goto(`${signing.url}/`);
      await page.waitForSelector("#operator:not([hidden])", { timeout: 30_000 });
      // Before signing in there is no table, so no link, no Copy and no count.
      expect(await page.isDisabled("#link")).toBe(true);
      expect(await page.getAttribute("#link", "placeholder")).toBe("Sign in as an operator first");
      expect(await page.isDisabled("#copy-link")).toBe(true);
      expect(await page.textContent("#count")).toBe("No table loaded.");
      await page.fill("#admin-token", ADMIN);
      await page.click("#token-form button");
      await page.waitForSelector("#col-name", { timeout: 30_000 });
      await page.check("#col-id");
      await page.fill("#limit", "5");
      await settledPreview(page);
      expect(await page.$$eval("#preview tbody tr", (trs) => trs.length)).toBe(5);
      await page.selectOption("#expiry", "86400");
      await page.click("#sign");
      await page.waitForFunction(() => (document.getElementById("link") as HTMLInputElement).value.includes("sig="));
      const link = new URL(await page.inputValue("#link"));
      expect(Number(link.searchParams.get("exp")) - Date.now() / 1000).toBeGreaterThan(86_000);
      const signed = await fetch(link);
      expect(signed.status).toBe(200);
      expect((await signed.text()).split("\r\n")).toEqual(["id", "1", "2", "3", "4", "5", ""]);
      link.searchParams.delete("sig");
      expect((await fetch(link)).status).toBe(403);

      // A summary is signed the same way: its preview, then its link.
      await page.check("#mode-summary");
      await page.click("#add-group");
      await page.selectOption("#group-0-column", "category");
      await settledPreview(page);
      expect(await page.textContent("#count")).toBe("5 groups");
      expect(await page.$$eval("#chart rect.bar", (rects) => rects.length)).toBe(5);
      await page.click("#sign");
      await page.waitForFunction(() =>
        (document.getElementById("link") as HTMLInputElement).value.includes("/aggregate.csv?"),
      );
      const summary = await fetch(await page.inputValue("#link"));
      expect(summary.status).toBe(200);
      expect((await summary.text()).split("\r\n")[0]).toBe("category,count");
    } finally {
      await page.close();
    }
  });
});
