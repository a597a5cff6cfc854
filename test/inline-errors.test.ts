import { describe, expect, it } from "vitest";
import { harness, isProbe } from "./harness.ts";
import { readWorkbook } from "./xlsx-reader.ts";

const SHEETS = "Mozilla/5.0 (compatible; GoogleDocs; apps-spreadsheets; +http://docs.google.com)";
const POWER_QUERY = "Microsoft.Data.Mashup (https://go.microsoft.com/fwlink/?LinkID=304225)";
const as = (userAgent: string): RequestInit => ({ headers: { "user-agent": userAgent } });

describe("errors a spreadsheet shows", () => {
  it("answers Google Sheets' fetcher with a one-cell table holding the message, HTTP 200, never stored", async () => {
    const { get } = harness();
    const res = await get("/export.csv?resource=sample&limit=ten", as(SHEETS));
    expect(res.status).toBe(200);
    expect(res.headers.get("x-export-error")).toBe("400");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(await res.text()).toBe('"#ERROR: Parameter limit must be a whole number, 0 or more (got ""ten"")."\r\n');
  });

  it("answers Power Query's fetcher the same way, in TSV too, and keeps the status of a 404", async () => {
    const { get } = harness();
    const res = await get("/export.tsv?resource=nope", as(POWER_QUERY));
    expect(res.status).toBe(200);
    expect(res.headers.get("x-export-error")).toBe("404");
    expect(await res.text()).toMatch(/^"#ERROR: No resource is published under the name ""nope""\..*"\r\n$/);
  });

  it("follows errors=inline and errors=status over the user agent, and leaves JSON alone", async () => {
    const { get } = harness();
    const inline = await get("/export.csv?resource=sample&fields=nope&errors=inline");
    expect(inline.status).toBe(200);
    expect(await inline.text()).toMatch(/^"?#ERROR: .*nope/);
    const status = await get("/export.csv?resource=sample&fields=nope&errors=status", as(SHEETS));
    expect(status.status).toBe(400);
    expect(((await status.json()) as { error: { message: string } }).error.message).toContain("nope");
    const json = await get("/export.json?resource=sample&limit=ten", as(SHEETS));
    expect(json.status).toBe(400);
    expect(json.headers.get("content-type")).toBe("application/json; charset=utf-8");
    // A wrong method is not a download: it keeps its 405.
    expect((await get("/export.csv?resource=sample&errors=inline", { method: "POST" })).status).toBe(405);
  });

  it("writes the message as the one cell of a workbook for XLSX", async () => {
    const { get } = harness();
    const res = await get("/export.xlsx?resource=sample&limit=ten&errors=inline");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-export-error")).toBe("400");
    const book = await readWorkbook(new Uint8Array(await res.arrayBuffer()));
    expect(book.rows).toEqual([
      [
        {
          type: "inlineStr",
          value: '#ERROR: Parameter limit must be a whole number, 0 or more (got "ten").',
          style: 1,
        },
      ],
    ]);
  });

  it("never serves an inline error from the edge cache: the next fetch gets the export", async () => {
    let failing = true;
    const { get, settle } = harness({
      emulator: { version: "2.12" },
      env: { CACHE_TTL_SECONDS: "300", UPSTREAM_RETRIES: "0" },
      fault: (_n, body) => (failing && !isProbe(body) ? new Response("boom", { status: 500 }) : undefined),
    });
    const first = await get("/export.csv?resource=sample&limit=3&fields=id", as(SHEETS));
    expect(first.headers.get("x-export-error")).toBe("502");
    expect(await first.text()).toMatch(/^#ERROR: CKAN answered HTTP 500/);
    await settle();
    failing = false;
    const second = await get("/export.csv?resource=sample&limit=3&fields=id", as(SHEETS));
    expect(second.headers.get("x-export-error")).toBeNull();
    expect(await second.text()).toBe("id\r\n1\r\n2\r\n3\r\n");
  });
});
