import { env as testEnv } from "cloudflare:workers";
import Papa from "papaparse";
import { describe, expect, it } from "vitest";
import { cellKind, excelDate, exactDouble } from "../src/format/xlsx-cells.ts";
import { harness, isProbe, pageCalls } from "./harness.ts";
import { readWorkbook, type Cell } from "./xlsx-reader.ts";

const bytes = async (response: Response): Promise<Uint8Array> => new Uint8Array(await response.arrayBuffer());

/** The XLSX cell a CSV export's cell must become, by the column's type. */
function expectedCell(csv: string, type: string): Pick<Cell, "type" | "value"> & { style?: number } {
  if (csv === "") return { type: expect.stringMatching(/^(inlineStr)?$/) as unknown as string, value: "" };
  const kind = cellKind(type);
  // Numbers a spreadsheet keeps exactly: 15 significant digits for integers and numerics, any double for floats.
  const digits = kind === "number" ? 15 : 17;
  if ((kind === "number" || kind === "float") && exactDouble(csv, digits) !== undefined)
    return { type: "n", value: exactDouble(csv, digits)! };
  if (kind === "bool") return { type: "b", value: csv === "true" ? "1" : "0" };
  const date = kind === "date" || kind === "timestamp" ? excelDate(csv) : undefined;
  if (date !== undefined) return { type: "n", value: date.serial, style: date.style };
  return { type: "inlineStr", value: csv };
}

describe.each(["2.12", "2.10"] as const)("XLSX of the edge table on CKAN %s", (version) => {
  it("has every cell of the CSV export, typed by its column, across pages", async () => {
    const h = harness({ emulator: { version }, env: { PAGE_SIZE: "500", BUFFER_BYTES: "0" } });
    const csv = Papa.parse<string[]>(
      (await (await h.get("/export.csv?resource=edge&formula_guard=0")).text()).trimEnd(),
      { newline: "\r\n" },
    ).data;
    const res = await h.get("/export.xlsx?resource=edge");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
    expect(res.headers.get("content-disposition")).toContain('filename="edge.xlsx"');
    const book = await readWorkbook(await bytes(res));
    const info = (await (await h.get("/resources/edge")).json()) as { columns: { id: string; type: string }[] };
    const types = new Map(info.columns.map((c) => [c.id, c.type]));
    const header = csv[0]!;
    expect(book.rows[0]!.map((c) => c.value)).toEqual(header);
    expect(book.rows).toHaveLength(csv.length);
    expect(book.rowNumbers).toEqual(book.rows.map((_, i) => i + 1));
    const seen = new Map<string, number>();
    for (let r = 1; r < csv.length; r++) {
      const cells = book.rows[r]!;
      expect(cells).toHaveLength(header.length);
      for (const [c, text] of csv[r]!.entries()) {
        const expected = expectedCell(text, types.get(header[c]!)!);
        expect(cells[c], `row ${r + 1}, ${header[c]}`).toMatchObject(expected);
        const key = `${header[c]}:${cells[c]!.type}`;
        seen.set(key, (seen.get(key) ?? 0) + 1);
      }
    }
    // Each kind of cell is there: numbers, numbers too long for a double kept as text, dates, booleans, text.
    for (const key of [
      "amount:n",
      "amount:inlineStr",
      "ratio:n",
      "created:n",
      "day:n",
      "active:b",
      "formula:inlineStr",
      "tags:inlineStr",
      "meta:inlineStr",
    ]) {
      expect(seen.get(key), key).toBeGreaterThan(0);
    }
  });
});

describe("XLSX exports", () => {
  it("keeps formula-like text as inline strings, which never run", async () => {
    const { get } = harness({ emulator: { version: "2.12" } });
    const book = await readWorkbook(await bytes(await get("/export.xlsx?resource=edge&fields=formula&limit=50")));
    const formulas = book.rows
      .slice(1)
      .map((r) => r[0]!)
      .filter((c) => /^[=+\-@]/.test(c.value));
    expect(formulas.length).toBeGreaterThan(3);
    expect(formulas.every((c) => c.type === "inlineStr" && !c.value.startsWith("'"))).toBe(true);
    expect(book.parts.get("xl/worksheets/sheet1.xml")).not.toMatch(/<f[ >]/);
  });

  it("refuses more rows than a sheet holds with a 400 before any byte", async () => {
    const { get, calls } = harness({ env: { MAX_ROWS: "5000000" } });
    const res = await get("/export.xlsx?resource=sample&limit=1048576");
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { message: string; parameter: string } };
    expect(error.parameter).toBe("limit");
    expect(error.message).toMatch(/xlsx format's maximum of 1048575 rows/);
    expect(calls).toHaveLength(0);
  });

  it("ends a whole workbook whose last row says so when paging finds more rows than allowed, and keeps it nowhere", async () => {
    // CKAN estimates 900 rows; counting finds more than MAX_ROWS while the sheet streams.
    const estimated = async (_n: number, body: unknown): Promise<Response | undefined> => {
      if ((body as { include_total?: boolean }).include_total === false) return undefined;
      const answer = (await (
        await harness().emulator.fetch(
          new Request("http://ckan.test/api/action/datastore_search", { method: "POST", body: JSON.stringify(body) }),
        )
      ).json()) as { result: Record<string, unknown> };
      return Response.json({ ...answer, result: { ...answer.result, total: 900, total_was_estimated: true } });
    };
    const jobs = JSON.stringify([{ name: "cut", resource: "sample", formats: ["xlsx"] }]);
    const h = harness({
      env: { MAX_ROWS: "1500", PAGE_SIZE: "500", BUFFER_BYTES: "0", CACHE_TTL_SECONDS: "300", SNAPSHOT_JOBS: jobs },
      fault: estimated,
    });
    const res = await h.get("/export.xlsx?resource=sample&fields=id");
    expect(res.status).toBe(200);
    const book = await readWorkbook(await bytes(res));
    const last = book.rows.at(-1)!;
    expect(last).toHaveLength(1);
    expect(last[0]).toMatchObject({
      type: "inlineStr",
      value: expect.stringMatching(
        /^#EXPORT INCOMPLETE: More than 1500 rows match.* The rows above are only part of the export\.$/,
      ) as unknown as string,
    });
    const ids = book.rows.slice(1, -1).map((r) => Number(r[0]!.value));
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
    expect(ids.length).toBeLessThanOrEqual(1500);
    expect(book.rowNumbers).toEqual(book.rows.map((_, i) => i + 1));
    await h.settle();
    const again = await h.get("/export.xlsx?resource=sample&fields=id");
    expect(again.headers.get("x-cache")).toBe("MISS");
    expect((await readWorkbook(await bytes(again))).rows.at(-1)![0]!.value).toMatch(/^#EXPORT INCOMPLETE/);
    await h.settle();

    const bucket = (testEnv as { SNAPSHOTS: R2Bucket }).SNAPSHOTS;
    await h.scheduled("0 3 * * *", Date.UTC(2026, 10, 20, 3));
    expect((await bucket.list({ prefix: "cut/" })).objects.filter((o) => o.key.endsWith(".xlsx"))).toEqual([]);
    expect((await h.get("/snapshots/cut/latest.xlsx")).status).toBe(404);
    const all = await bucket.list({ prefix: "cut/" });
    await bucket.delete(all.objects.map((o) => o.key));
  });

  it("leaves a broken ZIP and errors the stream when a page fails mid-stream", async () => {
    let pages = 0;
    const { get } = harness({
      emulator: { version: "2.12" },
      env: { BUFFER_BYTES: "0", UPSTREAM_RETRIES: "0" },
      fault: (_n, body) => (!isProbe(body) && ++pages >= 3 ? new Response("boom", { status: 500 }) : undefined),
    });
    const res = await get("/export.xlsx?resource=sample&limit=5000");
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const chunks: Uint8Array[] = [];
    const error = await (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return undefined;
          chunks.push(value);
        }
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeDefined();
    await expect(readWorkbook(new Uint8Array(await new Blob(chunks).arrayBuffer()))).rejects.toThrow(
      /not a complete ZIP/,
    );
  });

  it("streams 100,000 rows page by page in bounded chunks", async () => {
    const { get, calls } = harness({ emulator: { version: "2.12" }, env: { PAGE_SIZE: "32000", BUFFER_BYTES: "0" } });
    const started = Date.now();
    const res = await get("/export.xlsx?resource=sample");
    const reader = res.body!.getReader();
    const chunks: Uint8Array[] = [];
    let largest = 0;
    let pagesAtFirstChunk = -1;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (pagesAtFirstChunk < 0) pagesAtFirstChunk = pageCalls(calls).length;
      chunks.push(value);
      largest = Math.max(largest, value.byteLength);
    }
    const ms = Date.now() - started;
    // Pull-driven: the first bytes leave before most pages are fetched; no chunk holds more than a page.
    expect(pagesAtFirstChunk).toBeLessThanOrEqual(4);
    expect(pageCalls(calls).length).toBeGreaterThan(4);
    expect(largest).toBeLessThan(2 * 1024 * 1024);
    const book = await readWorkbook(new Uint8Array(await new Blob(chunks).arrayBuffer()));
    expect(book.rows).toHaveLength(100_001);
    console.log(
      `100,000 rows as XLSX: ${chunks.reduce((n, c) => n + c.byteLength, 0)} bytes in ${ms} ms, largest chunk ${largest} bytes`,
    );
  });

  it("starts streaming a large workbook after its first page, not after megabytes of compressed output", async () => {
    const h = harness({ emulator: { version: "2.12" }, env: { BUFFER_BYTES: "1048576" } });
    const res = await h.get("/export.xlsx?resource=sample&limit=20000");
    // Its first byte leaves while most pages are still to be fetched.
    expect(res.headers.get("content-length")).toBeNull();
    expect(h.calls.length).toBeLessThan(8);
    expect((await readWorkbook(await bytes(res))).rows).toHaveLength(20001);
  });

  it("refuses, before the first byte, a workbook whose sheet would pass the 4 GiB a ZIP without ZIP64 holds: as a link and as a snapshot", async () => {
    const wide = "x".repeat(5000);
    const snapshots = (testEnv as { SNAPSHOTS: R2Bucket }).SNAPSHOTS;
    const h = harness({
      env: {
        PAGE_SIZE: "1000",
        SNAPSHOT_JOBS: JSON.stringify([
          { name: "huge-book", resource: "sample", formats: ["xlsx"], cron: "0 4 * * *" },
        ]),
      },
      fault: (_n, body) =>
        body.resource_id === undefined || isProbe(body)
          ? undefined
          : Response.json({
              success: true,
              result: {
                fields: [
                  { id: "_id", type: "int" },
                  { id: "id", type: "int4" },
                  { id: "text", type: "text" },
                ],
                records: Array.from({ length: body.limit as number }, (_, i) => [i + 1, i + 1, wide]),
                limit: body.limit,
                total: 1_000_000,
              },
            }),
    });
    const res = await h.get("/export.xlsx?resource=sample");
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { message: string; parameter: string } };
    expect(error).toMatchObject({ parameter: "limit" });
    expect(error.message).toContain("more than the 4 GiB one XLSX sheet holds");
    // The snapshot is refused the same way, from its first page: nothing is written to R2.
    const [run] = await h.scheduled("0 4 * * *", Date.UTC(2026, 10, 20, 4));
    expect(run).toMatchObject({ job: "huge-book", status: "failed" });
    expect(run!.error).toContain("more than the 4 GiB one XLSX sheet holds");
    expect((await snapshots.list({ prefix: "huge-book/" })).objects.map((o) => o.key)).toEqual([
      "huge-book/manifest.json",
    ]);
  });

  it("is served from the edge cache the second time, the same bytes", async () => {
    const h = harness({ emulator: { version: "2.12" }, env: { CACHE_TTL_SECONDS: "300" } });
    const first = await bytes(await h.get("/export.xlsx?resource=sample&limit=2500"));
    await h.settle();
    const upstream = h.calls.length;
    const again = await h.get("/export.xlsx?resource=sample&limit=2500");
    expect(again.headers.get("x-cache")).toBe("HIT");
    expect(await bytes(again)).toEqual(first);
    expect(h.calls.length).toBe(upstream);
    expect((await readWorkbook(first)).rows).toHaveLength(2501);
  });

  it("is a snapshot format", async () => {
    const bucket = (testEnv as { SNAPSHOTS: R2Bucket }).SNAPSHOTS;
    const h = harness({
      env: { SNAPSHOT_JOBS: JSON.stringify([{ name: "sheet", resource: "sample", limit: 300, formats: ["xlsx"] }]) },
    });
    await h.scheduled("0 3 * * *", Date.UTC(2026, 10, 20, 3));
    const res = await h.get("/snapshots/sheet/latest.xlsx");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
    expect((await readWorkbook(await bytes(res))).rows).toHaveLength(301);
    const all = await bucket.list({ prefix: "sheet/" });
    await bucket.delete(all.objects.map((o) => o.key));
  });
});
