import { parquetMetadata } from "hyparquet";
import Papa from "papaparse";
import { describe, expect, it } from "vitest";
import {
  asCsvText,
  exactJson,
  type ExactNumber,
  harness,
  isProbe,
  pageCalls,
  readAll,
  type UpstreamCall,
} from "./harness.ts";
import { readWorkbook } from "./xlsx-reader.ts";

const SAMPLE = "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2";
const HEADER = "id,amount,ratio,category,name,note,formula,created,active";

describe("GET /export.csv", () => {
  it("answers a small export whole, with download headers and the upstream count", async () => {
    const { get } = harness();
    const res = await get("/export.csv?resource=sample&limit=3");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(res.headers.get("content-disposition")).toBe(
      `attachment; filename="sample.csv"; filename*=UTF-8''sample.csv`,
    );
    expect(res.headers.get("x-total-count")).toBe("100000");
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    const text = await res.text();
    expect(res.headers.get("content-length")).toBe(String(new TextEncoder().encode(text).byteLength));
    const lines = text.split("\r\n");
    expect(lines[0]).toBe(HEADER);
    expect(Papa.parse(text.trimEnd(), { newline: "\r\n" }).data).toHaveLength(4);
    expect(text.endsWith("\r\n")).toBe(true);
  });

  it("pages through upstream with POST, _id order, lists, the total asked once, and never follows _links", async () => {
    const { get, calls } = harness({ env: { PAGE_SIZE: "1000" } });
    const text = await (await get("/export.csv?resource=sample&limit=3500&fields=id")).text();
    const ids = text.trimEnd().split("\r\n").slice(1).map(Number);
    expect(ids).toEqual(Array.from({ length: 3500 }, (_, i) => i + 1));
    // The short page CKAN's count leaves right after the first: the full pages after it start shallower.
    expect(calls.map((c) => c.body.limit)).toEqual([1000, 500, 1000, 1000]);
    for (const [n, call] of calls.entries()) {
      expect(call.method).toBe("POST");
      expect(call.url).toMatch(/^http:\/\/ckan-\d+\.test\/data\/en\/api\/action\/datastore_search$/);
      expect(call.body.sort).toBe("_id");
      // Rows come as lists first; later CSV pages come as CKAN's own CSV, rewritten (see csv-passthrough).
      expect(call.body.records_format).toBe(n === 0 ? "lists" : "csv");
      // The count is asked once: CKAN counts on every page that does not say false.
      expect(call.body.include_total).toBe(n === 0);
    }
    expect(calls.slice(1).map((c) => c.body.offset)).toEqual([1000, 1500, 2500]);
  });

  it("keeps _id order with q, and leaves out rank and _id unless fields asks", async () => {
    const { get, calls } = harness();
    const text = await (await get("/export.csv?resource=sample&q=glacier&limit=50")).text();
    expect(text.split("\r\n")[0]).toBe(HEADER);
    const rows = Papa.parse<string[]>(text.trimEnd(), { newline: "\r\n" }).data.slice(1);
    const ids = rows.map((r) => Number(r[0]));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(calls[0]!.body.q).toBe("glacier");
    expect(calls[0]!.body.sort).toBe("_id");
  });

  it("gives q's rank where fields names it, on every page (CKAN's lists cannot carry it)", async () => {
    // CKAN's CSV pages, and pages of rows (the decimal comma): those ask objects, as the first page does.
    for (const [version, options] of [
      ["2.10", ""],
      ["2.12", ""],
      ["2.10", "&delimiter=;&decimal=,"],
      ["2.12", "&delimiter=;&decimal=,"],
    ] as const) {
      const { get, calls } = harness({ emulator: { version }, env: { PAGE_SIZE: "10" } });
      const res = await get(`/export.csv?resource=sample&q=glacier&fields=id,rank&limit=25${options}`);
      expect(res.status, `${version} ${options}`).toBe(200);
      const delimiter = options === "" ? "," : ";";
      const rows = Papa.parse<string[]>((await res.text()).trimEnd(), { newline: "\r\n", delimiter }).data;
      expect(rows[0]).toEqual(["id", "rank"]);
      expect(rows.length - 1).toBe(25);
      for (const row of rows.slice(1))
        expect(Number(row[1]!.replace(",", ".")), `${version} ${row}`).toBeGreaterThan(0);
      // Every request naming rank asks objects or CSV (the `_id` probe names `_id` alone).
      const naming = calls.filter((c) => c.body.q === "glacier" && (c.body.fields as string[]).includes("rank"));
      expect(naming[0]!.body.records_format).toBe("objects");
      expect(naming.map((c) => c.body.records_format)).not.toContain("lists");
    }
  });

  it("appends _id to the user's sort so offset paging is stable", async () => {
    const { get, calls } = harness({ env: { PAGE_SIZE: "100" } });
    const text = await (
      await get("/export.csv?resource=sample&sort=category desc&limit=250&fields=id,category")
    ).text();
    const rows = Papa.parse<string[]>(text.trimEnd(), { newline: "\r\n" }).data.slice(1);
    expect(new Set(rows.map((r) => r[0])).size).toBe(250);
    expect(calls[0]!.body.sort).toBe("category desc, _id");
    expect(calls[0]!.body.include_next_page).toBeUndefined();
  });

  it("reads back, through papaparse, equal to the JSON export of the same query", async () => {
    const { get } = harness({ env: { PAGE_SIZE: "300" } });
    const query = 'resource=sample&limit=1200&filters={"category":["alpha","beta"]}&formula_guard=0';
    const csv = await (await get(`/export.csv?${query}`)).text();
    const json = exactJson(await (await get(`/export.json?${query.replace("&formula_guard=0", "")}`)).text()) as Record<
      string,
      unknown
    >[];
    const parsed = Papa.parse<Record<string, string>>(csv, {
      header: true,
      skipEmptyLines: true,
      newline: "\r\n",
    }).data;
    expect(parsed).toHaveLength(1200);
    expect(json).toHaveLength(1200);
    // Both carry CKAN's own text for every number (`-3699.60` stays `-3699.60`).
    expect(parsed).toEqual(json.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, asCsvText(v)]))));
  });

  it("guards formulas in text cells by default, never in numbers, and not in JSON", async () => {
    const { get } = harness();
    const csv = await (await get("/export.csv?resource=sample&limit=400&fields=id,amount,formula")).text();
    const rows = Papa.parse<string[]>(csv.trimEnd(), { newline: "\r\n" }).data.slice(1);
    const json = exactJson(
      await (await get("/export.json?resource=sample&limit=400&fields=id,amount,formula")).text(),
    ) as {
      amount: ExactNumber | null;
      formula: string | null;
    }[];
    let guarded = 0;
    for (const [i, row] of rows.entries()) {
      const original = json[i]!.formula ?? "";
      const risky = /^[=+\-@\t\r\n]/.test(original) && !/^[+-]?\d+(\.\d+)?$/.test(original);
      expect(row[2]).toBe(risky ? `'${original}` : original);
      if (risky) guarded++;
      expect(row[1]).toBe(json[i]!.amount === null ? "" : json[i]!.amount.text);
    }
    expect(guarded).toBeGreaterThan(10);
    expect(json.some((r) => r.amount?.text.startsWith("-"))).toBe(true);
  });

  it("writes a BOM, no header, and semicolons on request; TSV and NDJSON too", async () => {
    const { get } = harness();
    const bom = new Uint8Array(await (await get("/export.csv?resource=sample&limit=1&bom=1")).arrayBuffer());
    expect([...bom.slice(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    const semi = await (
      await get("/export.csv?resource=sample&limit=2&header=0&delimiter=;&fields=id,category")
    ).text();
    expect(semi).toMatch(/^1;\w+\r\n2;\w+\r\n$/);
    const tsv = await get("/export.tsv?resource=sample&limit=2&fields=id,category");
    expect(tsv.headers.get("content-type")).toBe("text/tab-separated-values; charset=utf-8");
    expect(await tsv.text()).toMatch(/^id\tcategory\r\n1\t\w+\r\n2\t\w+\r\n$/);
    const nd = await get("/export.ndjson?resource=sample&limit=3&fields=id");
    expect(nd.headers.get("content-type")).toBe("application/x-ndjson; charset=utf-8");
    expect(new TextDecoder().decode(await nd.arrayBuffer())).toBe('{"id":1}\n{"id":2}\n{"id":3}\n');
  });

  it("names the download after filename=, with a safe ASCII fallback", async () => {
    const { get } = harness();
    const res = await get("/export.json?resource=sample&limit=1&filename=Zürich 2020");
    expect(res.headers.get("content-disposition")).toBe(
      `attachment; filename="Z_rich 2020.json"; filename*=UTF-8''Z%C3%BCrich%202020.json`,
    );
  });

  it("answers HEAD with the headers GET sends, from one upstream call that fetches no rows", async () => {
    const { get, calls } = harness();
    const res = await get("/export.csv?resource=sample&q=glacier&filter.category=alpha", { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
    expect(calls).toHaveLength(1);
    expect(calls[0]!.body).toMatchObject({
      limit: 0,
      include_total: true,
      q: "glacier",
      filters: { category: "alpha" },
    });
    const full = await get("/export.csv?resource=sample&q=glacier&filter.category=alpha");
    for (const name of ["content-type", "content-disposition", "x-total-count", "cache-control"]) {
      expect(res.headers.get(name), name).toBe(full.headers.get(name));
    }
    // Known only from the body: a HEAD that fetched no rows does not guess them.
    expect(res.headers.get("content-length")).toBeNull();
    expect(res.headers.get("etag")).toBeNull();
    await full.text();
  });

  it("answers HEAD with the errors GET gives: unknown columns, more rows than MAX_ROWS", async () => {
    const { get } = harness({ env: { MAX_ROWS: "50000" } });
    for (const path of ["/export.csv?resource=sample", "/export.csv?resource=sample&fields=id,nope&limit=5"]) {
      const [head, full] = [await get(path, { method: "HEAD" }), await get(path)];
      expect(head.status, path).toBe(400);
      expect(head.status, path).toBe(full.status);
    }
  });
});

describe("JSON exports", () => {
  it("is an array of records with keys in field order and types kept", async () => {
    const { get } = harness();
    const res = await get("/export.json?resource=sample&limit=2&fields=name,id,amount,active,created");
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    const text = await res.text();
    const records = JSON.parse(text) as Record<string, unknown>[];
    expect(records).toHaveLength(2);
    expect(Object.keys(records[0]!)).toEqual(["name", "id", "amount", "active", "created"]);
    expect(typeof records[0]!.id).toBe("number");
    expect(typeof records[0]!.active).toBe("boolean");
  });

  it("is an empty array for no rows, and limit=0 gives only the header in CSV", async () => {
    const { get } = harness();
    expect(await (await get("/export.json?resource=sample&limit=0")).json()).toEqual([]);
    expect(await (await get("/export.csv?resource=sample&limit=0")).text()).toBe(`${HEADER}\r\n`);
    expect(await (await get('/export.json?resource=sample&filters={"category":"no-such"}')).json()).toEqual([]);
  });
});

describe("row budget", () => {
  it("refuses an export above MAX_ROWS with the count and a way out, never a silent cap", async () => {
    const { get } = harness({ env: { MAX_ROWS: "5000" } });
    const res = await get("/export.csv?resource=sample");
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string; parameter: string } };
    expect(body.error.parameter).toBe("limit");
    expect(body.error.message).toContain("100000 rows match");
    expect(body.error.message).toContain("5000");
    const over = await get("/export.csv?resource=sample&limit=5001");
    expect(over.status).toBe(400);
    expect(((await over.json()) as { error: { message: string } }).error.message).toContain("5000");
    expect((await get("/export.csv?resource=sample&limit=5000")).status).toBe(200);
  });

  it("counts rows instead of trusting a page: a site whose rows_max is lower still yields every row", async () => {
    const { get, calls } = harness({ emulator: { rowsMax: 300, version: "2.12" }, env: { PAGE_SIZE: "1000" } });
    const text = await (await get("/export.csv?resource=sample&limit=1000&fields=id")).text();
    expect(text.trimEnd().split("\r\n").slice(1).map(Number)).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    expect(pageCalls(calls).map((c) => c.body.limit)).toEqual([1000, 300, 300, 100]);
  });
});

describe("header=label", () => {
  it("heads each column with its data dictionary label, its id where it has none, in CSV, TSV, XLSX and Parquet", async () => {
    // The emulated sample table has a data dictionary (CKAN's fields[].info) for every column but formula.
    const { get } = harness();
    const csv = await (await get("/export.csv?resource=sample&fields=id,amount,formula&limit=2&header=label")).text();
    expect(csv.split("\r\n")[0]).toBe("Grant number,Amount (CAD),formula");
    const tsv = await (await get("/export.tsv?resource=sample&fields=id,amount,formula&limit=2&header=label")).text();
    expect(tsv.split("\r\n")[0]).toBe("Grant number\tAmount (CAD)\tformula");
    const ids = await (await get("/export.csv?resource=sample&fields=id,amount,formula&limit=2")).text();
    expect(ids.split("\r\n")[0]).toBe("id,amount,formula");
    const xlsx = await get("/export.xlsx?resource=sample&fields=id,amount,formula&limit=2&header=label");
    expect(xlsx.status).toBe(200);
    const sheet = await readWorkbook(new Uint8Array(await xlsx.arrayBuffer()));
    expect(sheet.rows[0]!.map((cell) => cell.value)).toEqual(["Grant number", "Amount (CAD)", "formula"]);
    expect((await get("/export.xlsx?resource=sample&limit=2&header=0")).status).toBe(400);
    // Parquet names its columns by the labels, read by hyparquet from the file's footer; two columns
    // with one label (a Parquet file needs its names unique) get the id beside the second.
    const twice = harness({
      fault: async (_n, body) => {
        const answer = await harness().emulator.fetch(
          new Request("http://ckan.test/api/action/datastore_search", { method: "POST", body: JSON.stringify(body) }),
        );
        const json = (await answer.json()) as { result: { fields: { id: string; info?: unknown }[] } };
        for (const field of json.result.fields) if (field.id === "ratio") field.info = { label: "Amount (CAD)" };
        return Response.json(json);
      },
    });
    const parquet = await twice.get("/export.parquet?resource=sample&fields=id,amount,ratio&limit=2&header=label");
    expect(parquet.status).toBe(200);
    const schema = parquetMetadata(await parquet.arrayBuffer())
      .schema.slice(1)
      .map((element) => element.name);
    expect(schema).toEqual(["Grant number", "Amount (CAD)", "Amount (CAD) (ratio)"]);
    expect((await get("/export.parquet?resource=sample&limit=2&header=0")).status).toBe(400);
    const bad = await get("/export.csv?resource=sample&limit=2&header=labels");
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toContain("1, 0 or label");
  });
});

describe("Workers' subrequest limit", () => {
  it("refuses an export that would need more upstream requests than one request may make, before the first byte", async () => {
    const { get, calls } = harness({ env: { SUBREQUEST_LIMIT: "10", PAGE_SIZE: "1000" } });
    const res = await get("/export.csv?resource=sample&fields=id");
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { message: string; parameter: string } };
    expect(error.parameter).toBe("limit");
    expect(error.message).toMatch(
      /about 102 requests to CKAN \(1000 rows each\), more than the 10 .*SUBREQUEST_LIMIT.*limit=8000/,
    );
    expect(calls).toHaveLength(1);
    // HEAD knows no row's cost: it refuses only what even full pages could not fetch.
    const tight = harness({ env: { SUBREQUEST_LIMIT: "5", PAGE_SIZE: "1000" } });
    expect((await tight.get("/export.csv?resource=sample&fields=id", { method: "HEAD" })).status).toBe(400);
    expect((await tight.get("/export.csv?resource=sample&fields=id&limit=2000", { method: "HEAD" })).status).toBe(200);
    // The first page's limit is what was asked, not a site cap: later pages of narrow rows are large.
    const roomy = harness({ env: { SUBREQUEST_LIMIT: "50", PAGE_SIZE: "32000" } });
    const whole = await roomy.get("/export.csv?resource=sample&fields=id");
    expect(whole.status).toBe(200);
    expect((await whole.text()).trimEnd().split("\r\n")).toHaveLength(100_001);
    expect(roomy.calls.length).toBeLessThan(10);
    const fits = await get("/export.csv?resource=sample&fields=id&limit=8000");
    expect(fits.status).toBe(200);
    expect((await fits.text()).trimEnd().split("\r\n")).toHaveLength(8001);
    // Pages by `_id` lists (deep enough to pay before CKAN 2.12) may each end part-way: twice the pages counted.
    const small = harness({ env: { SUBREQUEST_LIMIT: "10", PAGE_SIZE: "200" } });
    const lists = await small.get("/export.csv?resource=sample&fields=id");
    expect(((await lists.json()) as { error: { message: string } }).error.message).toMatch(
      /about 1001 requests to CKAN \(200 rows each\).*limit=/,
    );
  });
});

describe("keyset paging", () => {
  it("on first contact with a CKAN 2.12 site, asks both ways at once and pages by _id ranges", async () => {
    const { get, calls } = harness({ warm: false, emulator: { version: "2.12" }, env: { PAGE_SIZE: "500" } });
    const text = await (await get("/export.csv?resource=sample&limit=1200&fields=id")).text();
    expect(text.trimEnd().split("\r\n").slice(1).map(Number)).toEqual(Array.from({ length: 1200 }, (_, i) => i + 1));
    expect(calls[0]!.body.include_next_page).toBe(true);
    expect(calls[1]!.body.include_next_page).toBeUndefined();
    // Then ranges of _id after the first page's last one, sized by the table's density, up to the limit.
    expect(pageCalls(calls.slice(2)).map((c) => c.body.filters)).toEqual([
      { _id: { gt: 500, lte: 1000 } },
      { _id: { gt: 1000, lte: 1200 } },
    ]);
    expect(calls.slice(2).filter((c) => isProbe(c.body))).toHaveLength(1);
  });

  it("continues after the first page's last _id on CKAN 2.12, whatever the offset", async () => {
    const { get, calls } = harness({ emulator: { version: "2.12" }, env: { PAGE_SIZE: "500" } });
    const text = await (await get("/export.csv?resource=sample&limit=1600&offset=10&fields=id")).text();
    expect(text.trimEnd().split("\r\n").slice(1).map(Number)).toEqual(Array.from({ length: 1600 }, (_, i) => i + 11));
    expect(calls[0]!.body.include_next_page).toBe(true);
    expect(calls[0]!.body.offset).toBe(10);
    const later = pageCalls(calls.slice(1));
    expect(later[0]!.body.offset).toBeUndefined();
    expect(later[0]!.body.filters).toEqual({ _id: { gt: 510, lte: 1010 } });
  });

  it("falls back to offset paging when CKAN 2.10 rejects include_next_page, without a round trip, and remembers", async () => {
    const { get, calls } = harness({ warm: false, env: { PAGE_SIZE: "500" } });
    const text = await (await get("/export.csv?resource=sample&limit=1200&fields=id")).text();
    expect(text.trimEnd().split("\r\n")).toHaveLength(1201);
    // The first page is asked both ways at once; the plain answer is used.
    expect(calls[0]!.body.include_next_page).toBe(true);
    expect(calls[1]!.body).toMatchObject({ offset: 0, limit: 500, include_total: true });
    expect(calls.slice(1).every((c) => c.body.include_next_page === undefined)).toBe(true);
    expect(calls.slice(2).map((c) => c.body.offset)).toEqual([500, 700]);
    const before = calls.length;
    await (await get("/export.csv?resource=sample&limit=10")).text();
    expect(calls.length).toBe(before + 1);
  });

  it("asks the first page one way only once /health has read the site's version", async () => {
    for (const [version, keyset] of [
      ["2.12", true],
      ["2.10", undefined],
    ] as const) {
      const { get, calls } = harness({ warm: false, emulator: { version }, env: { PAGE_SIZE: "500" } });
      expect((await get("/health")).status).toBe(200);
      const searches = (): UpstreamCall[] => calls.filter((c) => c.url.endsWith("/datastore_search"));
      const before = searches().length;
      const text = await (await get("/export.csv?resource=sample&limit=1200&fields=id")).text();
      expect(text.trimEnd().split("\r\n")).toHaveLength(1201);
      const first = searches().slice(before);
      expect(first[0]!.body.include_next_page).toBe(keyset);
      // No second first page: the next request is a later page (or, on 2.12, the probe for the largest _id).
      expect(first[1]!.body.offset === 0 && first[1]!.body.limit === 500).toBe(false);
    }
  });
});

describe("failures", () => {
  /** Fails the `on`-th page request and every one after (the probe for the largest _id is not a page). */
  const fail500 = (on: number) => {
    let pages = 0;
    return (_n: number, body: Record<string, unknown>) =>
      !isProbe(body) && ++pages >= on ? new Response("boom", { status: 500 }) : undefined;
  };

  it("makes a CSV cut off on the third page visibly incomplete, and errors the stream", async () => {
    const { get } = harness({
      emulator: { version: "2.12" },
      env: { BUFFER_BYTES: "0", UPSTREAM_RETRIES: "1" },
      fault: fail500(3),
    });
    const res = await get("/export.csv?resource=sample&limit=5000&fields=id");
    expect(res.status).toBe(200);
    const { text, error } = await readAll(res);
    expect(error).toBeDefined();
    const rows = Papa.parse<string[]>(text.trimEnd(), { newline: "\r\n" }).data;
    expect(rows).toHaveLength(1 + 2000 + 1);
    expect(rows.at(-1)).toEqual([
      expect.stringMatching(/^#EXPORT INCOMPLETE: CKAN answered HTTP 500\..*only part of the export/),
    ]);
  });

  it("leaves a cut-off JSON export invalid and a cut-off NDJSON export with a non-JSON last line", async () => {
    const json = await readAll(
      await harness({
        emulator: { version: "2.12" },
        env: { BUFFER_BYTES: "0", UPSTREAM_RETRIES: "0" },
        fault: fail500(2),
      }).get("/export.json?resource=sample&limit=3000"),
    );
    expect(() => JSON.parse(json.text)).toThrow();
    const nd = await readAll(
      await harness({
        emulator: { version: "2.12" },
        env: { BUFFER_BYTES: "0", UPSTREAM_RETRIES: "0" },
        fault: fail500(2),
      }).get("/export.ndjson?resource=sample&limit=3000"),
    );
    expect(nd.text.trimEnd().split("\n").at(-1)).toMatch(/^#EXPORT INCOMPLETE/);
  });

  it("gives a small export's late failure a real error status", async () => {
    const { get } = harness({ emulator: { version: "2.12" }, env: { UPSTREAM_RETRIES: "0" }, fault: fail500(2) });
    const res = await get("/export.csv?resource=sample&limit=1500");
    expect(res.status).toBe(502);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
  });

  it("retries 5xx and 429 (honouring Retry-After), not 4xx", async () => {
    const flaky = harness({
      emulator: { version: "2.12" },
      fault: (n) =>
        n <= 2 ? new Response("busy", { status: n === 1 ? 503 : 429, headers: { "retry-after": "0" } }) : undefined,
    });
    expect((await flaky.get("/export.csv?resource=sample&limit=5")).status).toBe(200);
    expect(flaky.calls).toHaveLength(3);
    const down = harness({ env: { UPSTREAM_RETRIES: "2" }, fault: () => new Response("down", { status: 502 }) });
    expect((await down.get("/export.csv?resource=sample&limit=5")).status).toBe(502);
    expect(down.calls).toHaveLength(3);
    const tooLong = harness({
      fault: () => new Response("later", { status: 429, headers: { "retry-after": "3600" } }),
    });
    const limited = await tooLong.get("/export.csv?resource=sample&limit=5");
    expect(limited.status).toBe(503);
    expect(limited.headers.get("retry-after")).toBe("3600");
    const bad = harness({
      fault: () =>
        Response.json(
          { success: false, error: { __type: "Validation Error", sort: ['invalid value "x"'] } },
          { status: 409 },
        ),
    });
    expect((await bad.get("/export.csv?resource=sample&limit=5&sort=x")).status).toBe(400);
    // One search, not retried (the second call only looks up the columns for the error's hint).
    expect(bad.calls.filter((call) => call.body.sort !== undefined)).toHaveLength(1);
  });

  it("maps network errors, time-outs, HTML and success:false to 502/504", async () => {
    const network = harness({
      env: { UPSTREAM_RETRIES: "1" },
      fault: () => Promise.reject(new TypeError("connection refused")),
    });
    const unreachable = await network.get("/export.csv?resource=sample");
    expect(unreachable.status).toBe(502);
    // Which address failed and which setting to check, so an operator can act on it.
    expect(((await unreachable.json()) as { error: { message: string } }).error.message).toMatch(
      /at ckan-\d+\.test .*CKAN_BASE_URL/,
    );
    expect(network.calls).toHaveLength(2);
    const slow = harness({ env: { UPSTREAM_TIMEOUT_SECONDS: "1" }, fault: () => new Promise<Response>(() => {}) });
    const timedOut = await slow.get("/export.csv?resource=sample");
    expect(timedOut.status).toBe(504);
    expect(((await timedOut.json()) as { error: { message: string } }).error.message).toContain("1 s");
    const html = harness({
      fault: () => new Response("<html>", { status: 200, headers: { "content-type": "text/html" } }),
    });
    expect((await html.get("/export.csv?resource=sample")).status).toBe(502);
    const wrongBase = harness({
      fault: () => new Response("<html>404</html>", { status: 404, headers: { "content-type": "text/html" } }),
    });
    const notThere = await wrongBase.get("/export.csv?resource=sample");
    expect(notThere.status).toBe(502);
    expect(((await notThere.json()) as { error: { message: string } }).error.message).toContain("CKAN_BASE_URL");
    const odd = harness({ fault: () => Response.json({ success: false }) });
    expect((await odd.get("/export.csv?resource=sample")).status).toBe(502);
  });

  it("passes CKAN's own validation on as a 400 naming the parameter", async () => {
    const { get } = harness();
    const cases: [string, string, RegExp][] = [
      ["filter.no_such_field=1", "filters", /no_such_field/],
      ["fields=id,nope", "fields", /nope/],
      ["sort=nope desc", "sort", /nope/],
      ["filter.id=abc", "filters", /column's type/],
    ];
    for (const [qs, parameter, message] of cases) {
      const res = await get(`/export.csv?resource=sample&${qs}`);
      expect(res.status, qs).toBe(400);
      const body = (await res.json()) as { error: { status: number; message: string; parameter: string } };
      expect(body.error.status).toBe(400);
      expect(body.error.parameter).toBe(parameter);
      expect(body.error.message).toMatch(message);
      expect(body.error.message).not.toMatch(/SELECT/);
    }
  });

  it("names sort and the column's type when CKAN cannot order a sorted column, and never blames filters a link does not have", async () => {
    // PostgreSQL's refusal as CKAN 2.11 wraps it: a json column has no order.
    const refused = () =>
      Response.json(
        {
          success: false,
          error: {
            query: ["Invalid query"],
            info: { orig: ["could not identify an ordering operator for type json"] },
            __type: "Validation Error",
          },
        },
        { status: 409 },
      );
    const { get } = harness({
      fault: (_n, body) => (typeof body.sort === "string" && body.sort.startsWith("meta") ? refused() : undefined),
    });
    const res = await get("/export.csv?resource=edge&sort=meta desc");
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { message: string; parameter?: string; docs?: string } };
    expect(error.parameter).toBe("sort");
    expect(error.message).toBe(
      'CKAN could not sort by "meta" (json): PostgreSQL has no order for a column of that type. Sort by another column.',
    );
    expect(error.docs).toMatch(/#param-sort$/);
    const both = await get("/export.csv?resource=edge&sort=meta&filter.id=1");
    expect(both.status).toBe(400);
    expect(((await both.json()) as { error: { parameter?: string } }).error.parameter).toBeUndefined();
  });

  it("maps an unknown resource to 404 and a private one without a token to 403", async () => {
    const { get } = harness({ env: { CKAN_API_TOKEN: undefined } });
    expect((await get("/export.csv?resource_id=00000000-0000-4000-8000-000000000000")).status).toBe(404);
    const denied = await get("/export.csv?resource=private");
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { error: { message: string } }).error.message).toContain(
      "private on the CKAN site, and this worker has no CKAN token",
    );
    const wrongToken = harness({ env: { CKAN_API_TOKEN: "not-the-token" } });
    const refused = await wrongToken.get("/export.csv?resource=private");
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(
      "configured CKAN token cannot read this resource",
    );
    const withToken = harness();
    const ok = await withToken.get("/export.csv?resource=private");
    expect(ok.status).toBe(200);
    expect(ok.headers.get("x-total-count")).toBe("50");
  });
});

describe("routes and configuration", () => {
  it("answers unknown routes, formats and methods with JSON errors", async () => {
    const { get } = harness();
    const notFound = await get("/nope");
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get("content-type")).toBe("application/json; charset=utf-8");
    // The 404 lists what there is, from the route table: every export format included.
    const { message } = ((await notFound.json()) as { error: { message: string } }).error;
    for (const route of [
      "GET|HEAD /export.csv",
      "GET|HEAD /export.xlsx",
      "GET /resources",
      "POST /links",
      "GET|HEAD /snapshots/{name}/{file}",
    ])
      expect(message).toContain(route);
    // A path that exists, asked with a method it does not answer: 405 naming the ones it does.
    const postList = await get("/resources", { method: "POST" });
    expect(postList.status).toBe(405);
    expect(postList.headers.get("allow")).toBe("GET");
    expect(((await postList.json()) as { error: { message: string } }).error.message).toBe(
      "POST is not how /resources is used: it answers GET.",
    );
    expect((await get("/export.xml?resource=sample")).status).toBe(404);
    const post = await get("/export.csv?resource=sample", { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    const bad = await get("/export.csv?resource=sample&limit=x");
    expect(await bad.json()).toEqual({
      error: {
        status: 400,
        message: 'Parameter limit must be a whole number, 0 or more (got "x").',
        parameter: "limit",
        docs: "http://worker.test/#param-limit",
      },
    });
  });

  it("reports a bad setting as a 503 naming it on every route, and accepts RESOURCES as a table or JSON text", async () => {
    const unset = harness({ env: { CKAN_BASE_URL: undefined } });
    for (const path of ["/export.csv?resource=sample", "/resources", "/snapshots", "/openapi.json", "/nowhere"]) {
      const missing = await unset.get(path);
      expect(missing.status, path).toBe(503);
      const { error } = (await missing.json()) as { error: { setting: string; message: string } };
      expect(error.setting).toBe("CKAN_BASE_URL");
      expect(error.message).toContain("wrangler.toml");
    }
    const broken = await harness({ env: { RESOURCES: "{sample:" } }).get("/export.csv?resource=sample");
    expect(((await broken.json()) as { error: { setting: string } }).error.setting).toBe("RESOURCES");
    const badRows = await harness({ env: { MAX_ROWS: "lots" } }).get("/export.csv?resource=sample");
    expect(((await badRows.json()) as { error: { setting: string } }).error.setting).toBe("MAX_ROWS");
    const table = harness({ env: { RESOURCES: { sample: SAMPLE } } });
    expect((await table.get("/export.csv?resource=sample&limit=1")).status).toBe(200);
  });
});

describe("refusals that say what was meant", () => {
  it("suggests the known parameter a typo was meant for, with its docs; says a range bound lost its bracket; refuses an empty resource", async () => {
    const { get, calls } = harness();
    const typo = (await (await get("/export.csv?resource=sample&limt=10")).json()) as {
      error: { status: number; message: string; parameter: string; docs?: string };
    };
    expect(typo.error).toMatchObject({ status: 400, parameter: "limt" });
    expect(typo.error.message).toMatch(/^Unknown parameter limt\. Did you mean limit\?/);
    expect(typo.error.docs).toMatch(/\/#param-limit$/);
    const bracket = await get("/export.csv?resource=sample&filter.amount[gt=1");
    expect(bracket.status).toBe(400);
    const { error } = (await bracket.json()) as { error: { message: string; docs?: string } };
    expect(error.message).toContain(
      "has no closing bracket: a range filter's bound is written filter.amount[gt]=<value>.",
    );
    expect(error.docs).toMatch(/\/#param-filter-field-gt-gte-lt-lte$/);
    const empty = await get("/export.csv?resource=");
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as { error: { parameter: string } }).error.parameter).toBe("resource");
    expect(calls).toHaveLength(0);
  });
});

describe("names and filters that look hostile", () => {
  it("writes a download name cut after 120 characters without splitting a character", async () => {
    const res = await harness().get(
      `/export.csv?resource=sample&limit=1&filename=${"a".repeat(119)}${encodeURIComponent("😀")}b`,
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("content-disposition")).toContain("%F0%9F%98%80.csv");
  });

  it("passes filters on columns named like JavaScript's own properties", async () => {
    const { get, calls } = harness();
    await get('/export.csv?resource=sample&filter.constructor=x&filters={"__proto__":"y"}');
    const filters = calls.find((call) => call.body.filters !== undefined)!.body.filters as Record<string, unknown>;
    expect(Object.keys(filters).sort()).toEqual(["__proto__", "constructor"]);
  });
});
