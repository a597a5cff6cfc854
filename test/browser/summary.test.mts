// The link builder's Summarize mode in headless Chromium, against the worker in `wrangler dev` and the
// CKAN emulator: group the sample grants by program (and by month of approval), count and sum them,
// and compare the link, the preview's table and the chart the page draws with /aggregate fetched
// directly; the snippets for Sheets, Grafana, Vega-Lite, Observable Plot and pandas read that link.
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
const skip = findBrowser() === undefined && process.env.CI !== "true";
if (skip) process.stderr.write(`test/browser: ${NO_BROWSER}\n`);

describe.skipIf(skip)("the link builder's Summarize mode, in headless Chromium", () => {
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

  /** The sample grants in Summarize mode, grouped by program: count, and the sum of amounts. */
  async function summarize(page: Page): Promise<void> {
    await page.goto(`${worker.url}/?resource=sample`);
    await page.waitForSelector("#col-name", { timeout: 30_000 });
    await page.check("#mode-summary");
    await page.click("#add-group");
    await page.selectOption("#group-0-column", "category");
    await page.click("#add-measure");
    await page.selectOption("#measure-1-fn", "sum");
    await page.selectOption("#measure-1-column", "amount");
    await settledPreview(page);
  }

  /** The CSV aggregate's rows (header first), each cell as the worker wrote it. */
  async function csv(path: string): Promise<string[][]> {
    const response = await fetch(`${worker.url}${path}`);
    expect(response.status).toBe(200);
    return Papa.parse<string[]>((await response.text()).trimEnd(), { newline: "\r\n" }).data;
  }

  const table = (page: Page) =>
    page.$$eval("#preview", ([t]) => ({
      head: [...t!.querySelectorAll("thead th")].map((th) => [th.textContent, th.getAttribute("title")]),
      rows: [...t!.querySelectorAll("tbody tr")].map((tr) =>
        [...tr.querySelectorAll("td")].map((td) => td.textContent ?? ""),
      ),
    }));

  it("groups the grants by program, top 3 by the sum of amounts: link, table and bars are /aggregate's answer", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on("pageerror", (error) => void errors.push(error.message));
    try {
      await summarize(page);
      await page.selectOption("#summary-sort", "sum(amount)");
      await page.selectOption("#summary-direction", "desc nulls last");
      await page.fill("#summary-limit", "3");
      await settledPreview(page);
      expect(await page.textContent("#summary-sort-note")).toBe(
        "Descending with empty values last (sort=… desc nulls last): the largest Amount (CAD) (sum) first, groups where it is empty at the end.",
      );

      const query =
        "resource=sample&group_by=category&measures=count,sum(amount)&sort=sum(amount)%20desc%20nulls%20last&limit=3";
      const link = await page.inputValue("#link");
      expect(link).toBe(`${worker.url}/aggregate.csv?${query}`);
      const expected = await csv(`/aggregate.csv?${query}`);
      expect(expected[0]).toEqual(["category", "count", "sum(amount)"]);
      expect(expected).toHaveLength(4);
      // Each group's sum to the last digit, as the CSV writes it; headed by the picker's labels, names on hover.
      expect(await table(page)).toEqual({
        head: [
          ["Program", "category"],
          ["count", null],
          ["Amount (CAD) (sum)", "sum(amount)"],
        ],
        rows: expected.slice(1),
      });
      const groups = (await fetch(`${worker.url}/aggregate.json?resource=sample&group_by=category`)).headers.get(
        "x-total-count",
      );
      expect(groups).toBe("5");
      expect(await page.textContent("#count")).toBe("top 3 of 5 groups");

      // One bar per group for the first measure (count), as long as its value says.
      const bars = await page.$$eval("#chart svg[data-kind=bar] rect.bar", (rects) =>
        rects.map((r) => ({ value: r.getAttribute("data-value"), width: Number(r.getAttribute("width")) })),
      );
      expect(bars.map((b) => b.value)).toEqual(expected.slice(1).map((row) => row[1]));
      for (const bar of bars)
        expect(bar.width / bars[0]!.width).toBeCloseTo(Number(bar.value) / Number(bars[0]!.value), 2);
      // Labelled with their program (the text beside the bar, not its tooltip).
      const labels = await page.$$eval("#chart svg[data-kind=bar] text.label", (texts) =>
        texts.map((t) =>
          [...t.childNodes]
            .filter((n) => n.nodeType === Node.TEXT_NODE)
            .map((n) => n.textContent)
            .join(""),
        ),
      );
      expect(labels).toEqual(expected.slice(1).map((row) => row[0]));
      // Charting the sums instead: the bars carry the sums' exact text.
      await page.selectOption("#chart-measure", "sum(amount)");
      expect(await page.$$eval("#chart rect.bar", (rects) => rects.map((r) => r.getAttribute("data-value")))).toEqual(
        expected.slice(1).map((row) => row[2]),
      );
      await page
        .locator('section[aria-labelledby="preview-title"]')
        .screenshot({ path: `${ARTIFACTS}summary-bars.png` });

      // The snippets read the link: Sheets and pandas the CSV; Grafana, Vega-Lite and Plot the JSON.
      expect(await page.textContent("#snippet-sheets")).toBe(`=IMPORTDATA("${link}")`);
      expect(await page.textContent("#snippet-pandas")).toContain(`pd.read_csv(${JSON.stringify(link)}`);
      await page.check("#format-json");
      const json = await page.inputValue("#link");
      expect(json).toBe(`${worker.url}/aggregate.json?${query}`);
      expect(JSON.parse((await page.textContent("#snippet-grafana"))!)).toEqual({
        type: "json",
        source: "url",
        format: "table",
        url: json,
        url_options: { method: "GET" },
        root_selector: "",
        columns: [
          { selector: "category", text: "Program", type: "string" },
          { selector: "count", text: "count", type: "number" },
          { selector: "sum(amount)", text: "Amount (CAD) (sum)", type: "number" },
        ],
      });
      const vega = JSON.parse((await page.textContent("#snippet-vega-lite"))!);
      expect(vega.data).toEqual({ url: json, format: { type: "json" } });
      expect(vega.mark).toBe("bar");
      expect(vega.encoding.y.field).toBe("category");
      expect(vega.encoding.x.field).toBe("count");
      expect(await page.textContent("#snippet-plot")).toContain(
        `Plot.barX(rows, { y: "category", x: "count", sort: { y: "-x" }, tip: true })`,
      );
      expect(await page.$$("#snippet-sheets")).toEqual([]);
      expect(await page.textContent("#snippets details[data-tool=sheets] .warning")).toBe(
        "Google Sheets imports CSV or TSV: pick one of those formats for =IMPORTDATA.",
      );
      // What those tools fetch: the JSON aggregate, the groups as the CSV has them.
      const rows = (await (await fetch(json)).json()) as Array<Record<string, unknown>>;
      expect(rows.map((row) => row.category)).toEqual(expected.slice(1).map((row) => row[0]));
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("draws a line per program over the month of approval, its points the aggregate's rows", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await summarize(page);
      await page.click("#add-group");
      await page.selectOption("#group-1-column", "created");
      // A timestamp column groups by month unless told otherwise; it offers year, month and day.
      expect(
        await page.$$eval("#group-1-bucket option", (options) =>
          options.map((o) => [o.getAttribute("value"), o.textContent]),
        ),
      ).toEqual([
        ["", "each value"],
        ["year", "year"],
        ["month", "month"],
        ["day", "day"],
      ]);
      expect(await page.inputValue("#group-1-bucket")).toBe("month");
      await settledPreview(page);
      const query = "resource=sample&group_by=category,month(created)&measures=count,sum(amount)";
      expect(await page.inputValue("#link")).toBe(`${worker.url}/aggregate.csv?${query}`);
      const expected = (await csv(`/aggregate.csv?${query}`)).slice(1);
      expect(await page.textContent("#count")).toBe(`${expected.length} groups, the first 20 shown`);
      expect((await table(page)).rows).toEqual(expected.slice(0, 20));

      // One series per program; its points the program's months in order, empty months left out.
      const series = await page.$$eval("#chart svg[data-kind=line] g.series", (groups) =>
        groups.map((g) => ({
          name: g.getAttribute("data-series"),
          points: [...g.querySelectorAll("circle.point")].map((c) => [
            c.getAttribute("data-x"),
            c.getAttribute("data-value"),
          ]),
        })),
      );
      const programs = [...new Set(expected.map((row) => row[0]))];
      expect(series.map((s) => s.name)).toEqual(programs);
      for (const { name, points } of series) {
        expect(points).toEqual(
          expected.filter((row) => row[0] === name && row[1] !== "").map((row) => [row[1], row[2]]),
        );
        expect(points.length).toBeGreaterThan(2);
      }
      // The line's points rise as the counts do: a larger count is drawn higher (a smaller y).
      const heights = await page.$$eval("#chart g.series:first-of-type circle.point", (cs) =>
        cs.map((c) => [Number(c.getAttribute("data-value")), Number(c.getAttribute("cy"))]),
      );
      for (const [a, b] of heights.flatMap((p, i) => heights.slice(i + 1).map((q) => [p, q] as const))) {
        if (a![0]! > b![0]!) expect(a![1]).toBeLessThan(b![1]!);
      }
      await page
        .locator('section[aria-labelledby="preview-title"]')
        .screenshot({ path: `${ARTIFACTS}summary-line.png` });

      // The snippets chart it the same way: a temporal x with a colour per program.
      await page.check("#format-json");
      const vega = JSON.parse((await page.textContent("#snippet-vega-lite"))!);
      expect(vega.encoding.x).toEqual({ field: "month(created)", type: "temporal", title: "Approved at (month)" });
      expect(vega.encoding.color.field).toBe("category");
      expect(await page.textContent("#snippet-plot")).toContain(
        `Plot.lineY(rows, { x: (d) => new Date(d["month(created)"]), y: "count", stroke: "category", marker: true, tip: true })`,
      );
      expect(await page.textContent("#snippet-pandas")).toContain(
        `df["month(created)"] = pd.to_datetime(df["month(created)"])`,
      );
    } finally {
      await page.close();
    }
  });

  it("offers only what the worker accepts, starts again with another table, and fits a phone", async () => {
    const context = await browser.newContext({
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
    });
    const page = await context.newPage();
    try {
      await summarize(page);
      // Sums and averages of number columns only; counts, min and max of any column but json.
      expect(
        await page.$$eval("#measure-1-column option", (options) => options.map((o) => o.getAttribute("value"))),
      ).toEqual(["", "id", "amount", "ratio"]);
      await page.selectOption("#measure-1-fn", "min");
      expect(await page.inputValue("#measure-1-column")).toBe("amount");
      expect(await page.isDisabled("#measure-0-column")).toBe(true);
      expect(await page.isDisabled("#group-0-bucket")).toBe(true);
      await settledPreview(page);
      expect(new URL(await page.inputValue("#link")).searchParams.get("measures")).toBe("count,min(amount)");
      expect(await page.$$eval("#chart rect.bar", (rects) => rects.length)).toBe(5);
      expect(
        await page.$$eval("#chart-measure option", (options) => options.map((o) => o.getAttribute("value"))),
      ).toEqual(["count", "min(amount)"]);
      // The smallest amounts are repayments: their bars end at the zero axis, the counts' start there.
      const mins = (await csv("/aggregate.csv?resource=sample&group_by=category&measures=count,min(amount)")).slice(1);
      expect(mins.every((row) => row[2]!.startsWith("-"))).toBe(true);
      const drawn = () =>
        page.$eval("#chart svg[data-kind=bar]", (svg) => ({
          zero: Number(svg.querySelector("line.axis")?.getAttribute("x1")),
          bars: [...svg.querySelectorAll("rect.bar")].map((r) => ({
            value: r.getAttribute("data-value")!,
            x: Number(r.getAttribute("x")),
            end: Number(r.getAttribute("x")) + Number(r.getAttribute("width")),
          })),
        }));
      const counts = await drawn();
      expect(counts.bars.map((b) => b.value)).toEqual(mins.map((row) => row[1]));
      for (const bar of counts.bars) expect(bar.x).toBeCloseTo(counts.zero, 5);
      await page.selectOption("#chart-measure", "min(amount)");
      const negative = await drawn();
      expect(negative.bars.map((b) => b.value)).toEqual(mins.map((row) => row[2]));
      for (const bar of negative.bars) expect(bar.end).toBeCloseTo(negative.zero, 5);
      // The first recipient's name is text: not charted, and typed as a string for Grafana.
      await page.selectOption("#measure-1-column", "name");
      await settledPreview(page);
      expect(
        await page.$$eval("#chart-measure option", (options) => options.map((o) => o.getAttribute("value"))),
      ).toEqual(["count"]);
      expect(JSON.parse((await page.textContent("#snippet-grafana"))!).columns[2]).toEqual({
        selector: "min(name)",
        text: "Recipient (min)",
        type: "string",
      });

      const wide = await page.evaluate(() =>
        [...document.querySelectorAll("body *")]
          .filter((e) => e.getBoundingClientRect().right > 391 && !e.closest(".table-wrap"))
          .map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.getAttribute("class")}`),
      );
      expect(wide, "elements wider than the phone's screen").toEqual([]);
      await page
        .locator('section[aria-labelledby="columns-title"]')
        .screenshot({ path: `${ARTIFACTS}summary-phone-panel.png` });
      await page
        .locator('section[aria-labelledby="preview-title"]')
        .screenshot({ path: `${ARTIFACTS}summary-phone-preview.png` });

      // The edge table has none of these columns: the summary starts again from a count of rows.
      await page.selectOption("#resource", "edge");
      await page.waitForSelector("#group-0-column", { state: "detached" });
      await settledPreview(page);
      expect(await page.inputValue("#link")).toBe(`${worker.url}/aggregate.csv?resource=edge&measures=count`);
      expect(await page.$$eval("#measures .pick", (picks) => picks.length)).toBe(1);
      expect((await table(page)).rows).toEqual((await csv("/aggregate.csv?resource=edge&measures=count")).slice(1));
      // json and array columns can be neither grouped nor measured; min and max take no booleans.
      const values = (selector: string) =>
        page.$$eval(selector, (options) => options.map((o) => o.getAttribute("value")));
      await page.click("#add-group");
      expect(await values("#group-0-column option")).toEqual([
        "",
        "id",
        "amount",
        "ratio",
        "category",
        "name",
        "note",
        "formula",
        "created",
        "day",
        "active",
      ]);
      await page.click("#add-measure");
      await page.selectOption("#measure-1-fn", "min");
      expect(await values("#measure-1-column option")).toEqual([
        "",
        "id",
        "amount",
        "ratio",
        "category",
        "name",
        "note",
        "formula",
        "created",
        "day",
      ]);
      await page.selectOption("#measure-1-fn", "countf");
      expect(await values("#measure-1-column option")).toContain("active");
    } finally {
      await context.close();
    }
  });
});
