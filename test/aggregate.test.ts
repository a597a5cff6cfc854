import Papa from "papaparse";
import { describe, expect, it } from "vitest";
import { EMULATOR_RESOURCES } from "../emulator/index.ts";
import { exactJson, ExactNumber, harness } from "./harness.ts";

// /aggregate.<format>: groups computed by the worker from the pages of the edge-case table (every
// column type, numerics with 0 to 9 decimals and 29 digits, nulls everywhere), checked against
// what a reference computes from CKAN's own rows, read in one call.

const EDGE = EMULATOR_RESOURCES.edge;
const env = { PAGE_SIZE: "500", BUFFER_BYTES: "0" };

type Cell = string | ExactNumber | boolean | null;

/** CKAN's rows of the edge table, exact, by column name. */
async function edgeRows(version: "2.10" | "2.12"): Promise<Record<string, Cell>[]> {
  const { emulator } = harness({ emulator: { version } });
  const response = await emulator.fetch(
    new Request("http://ckan.test/api/action/datastore_search", {
      method: "POST",
      body: JSON.stringify({ resource_id: EDGE, limit: 32000, sort: "_id", records_format: "objects" }),
    }),
  );
  return (exactJson(await response.text()) as { result: { records: Record<string, Cell>[] } }).result.records;
}

/** A reference sum of decimal texts: all brought to 9 decimals (the most the edge table has), as BigInt. */
function referenceSum(values: string[]): string {
  const scale = Math.max(0, ...values.map((v) => (v.split(".")[1] ?? "").length));
  const total = values.reduce((sum, v) => {
    const [whole = "0", fraction = ""] = v.replace("-", "").split(".");
    const units = BigInt(whole + fraction.padEnd(scale, "0"));
    return sum + (v.startsWith("-") ? -units : units);
  }, 0n);
  const digits = (total < 0n ? -total : total).toString().padStart(scale + 1, "0");
  return `${total < 0n ? "-" : ""}${scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`}`;
}

const csvRows = (text: string): string[][] => Papa.parse<string[]>(text.trimEnd(), { newline: "\r\n" }).data;
const numberText = (cell: Cell | undefined): string => (cell instanceof ExactNumber ? cell.text : String(cell));

describe.each(["2.12", "2.10"] as const)("aggregates computed by the worker on CKAN %s", (version) => {
  it("counts, sums exactly and finds min and max per category, every digit and trailing zero as PostgreSQL's GROUP BY gives them", async () => {
    const rows = await edgeRows(version);
    const { get, calls } = harness({ emulator: { version }, env });
    const response = await get(
      "/aggregate.csv?resource=edge&group_by=category&measures=count,count(amount),sum(amount),min(amount),max(amount),max(created)",
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("x-aggregated-by")).toBe("worker");
    const cells = csvRows(await response.text());
    expect(cells[0]).toEqual([
      "category",
      "count",
      "count(amount)",
      "sum(amount)",
      "min(amount)",
      "max(amount)",
      "max(created)",
    ]);

    const categories = [...new Set(rows.map((r) => r.category as string | null))];
    // Groups in ascending order, the null group (an empty cell) last.
    const ordered: (string | null)[] = categories.filter((c) => c !== null).sort();
    if (categories.includes(null)) ordered.push(null);
    expect(cells.slice(1).map((r) => r[0])).toEqual(ordered.map((c) => c ?? ""));
    for (const line of cells.slice(1)) {
      const group = rows.filter((r) => (r.category ?? "") === line[0]);
      const amounts = group
        .map((r) => r.amount)
        .filter((a) => a !== null)
        .map(numberText);
      const byValue = [...amounts].sort((a, b) => Number(a) - Number(b) || a.length - b.length);
      expect(line[1]).toBe(String(group.length));
      expect(line[2]).toBe(String(amounts.length));
      expect(line[3]).toBe(amounts.length === 0 ? "" : referenceSum(amounts));
      expect(Number(line[4])).toBe(Number(byValue[0]));
      expect(Number(line[5])).toBe(Number(byValue.at(-1)));
      // min and max keep the value as CKAN wrote it, a value of the column.
      expect(amounts).toContain(line[4]);
      expect(amounts).toContain(line[5]);
      const created = group
        .map((r) => r.created)
        .filter((c): c is string => c !== null)
        .sort();
      expect(line[6]).toBe(created.at(-1) ?? "");
    }
    // Pages were read with only the columns the aggregate needs, and several of them.
    const pages = calls.filter((c) => Array.isArray(c.body.fields) && c.body.sort !== "_id desc");
    expect(pages.length).toBeGreaterThan(5);
    for (const page of pages)
      expect((page.body.fields as string[]).filter((f) => f !== "_id")).toEqual(["category", "amount", "created"]);
  });

  it("buckets timestamps by month and dates by day, each bucket its first instant in the column's type", async () => {
    const rows = await edgeRows(version);
    const { get } = harness({ emulator: { version }, env });
    const cells = csvRows(await (await get("/aggregate.csv?resource=edge&group_by=month(created)")).text());
    const months = new Map<string, number>();
    for (const r of rows) {
      const key = r.created === null ? "" : `${(r.created as string).slice(0, 7)}-01T00:00:00`;
      months.set(key, (months.get(key) ?? 0) + 1);
    }
    const expected = [...months].sort(([a], [b]) => (a === "" ? 1 : b === "" ? -1 : a < b ? -1 : 1));
    expect(cells).toEqual([["month(created)", "count"], ...expected.map(([k, n]) => [k, String(n)])]);

    const days = exactJson(
      await (await get("/aggregate.json?resource=edge&group_by=year(day)&measures=count(day),min(day)")).text(),
    ) as Record<string, Cell>[];
    for (const group of days) {
      const year = group["year(day)"] as string | null;
      const members = rows.filter((r) => r.day !== null && (r.day as string).startsWith(year?.slice(0, 4) ?? "!"));
      if (year === null) continue;
      expect(year).toMatch(/^\d{4}-01-01$/);
      expect(numberText(group["count(day)"] as Cell)).toBe(String(members.length));
      expect(group["min(day)"]).toBe(members.map((r) => r.day as string).sort()[0]);
    }
  });
});

describe.each(["2.12", "2.10"] as const)("pages read as CKAN's CSV on CKAN %s", (version) => {
  it.each([
    "group_by=name,active&measures=count,count(tags),min(note),max(formula),sum(amount),avg(ratio),max(ratio),min(created),max(day)",
    "group_by=tags&measures=count,sum(id)",
    "group_by=ratio&measures=count,min(amount)",
    "group_by=amount&measures=count,max(name)",
  ])("give the cells of pages read as JSON rows: %s", async (query) => {
    const viaCsv = harness({ emulator: { version }, env });
    const viaRows = harness({ emulator: { version }, env: { ...env, CSV_PASSTHROUGH: "false" } });
    const [csv, rows] = await Promise.all([
      viaCsv.get(`/aggregate.json?resource=edge&${query}`),
      viaRows.get(`/aggregate.json?resource=edge&${query}`),
    ]);
    expect(viaCsv.calls.filter((c) => c.body.records_format === "csv").length).toBeGreaterThan(3);
    expect(viaRows.calls.filter((c) => c.body.records_format === "csv")).toHaveLength(0);
    const text = await csv.text();
    expect(text).toBe(await rows.text());
    expect(text.length).toBeGreaterThan(100);
  });
});

describe("an aggregate's answer", () => {
  it("is one row of totals without group_by, with PostgreSQL's types: sum(int4) int8, avg numeric with 16 significant digits", async () => {
    const { get } = harness({ env, emulator: { version: "2.12" } });
    const text = await (
      await get("/aggregate.json?resource=edge&measures=count,sum(id),avg(id),min(id)&filter.id[lte]=4321")
    ).text();
    // JSON numbers bare, every digit.
    expect(text).toBe('[\n{"count":4321,"sum(id)":9337681,"avg(id)":2161.0000000000000000,"min(id)":1}\n]\n');
  });

  it("writes a sum or average of no values as null, and an empty group list as no rows", async () => {
    const { get } = harness({ env });
    const none = await (
      await get("/aggregate.ndjson?resource=edge&measures=count,sum(amount),avg(ratio),max(name)&filter.id=-5")
    ).text();
    expect(none).toBe('{"count":0,"sum(amount)":null,"avg(ratio)":null,"max(name)":null}\n');
    const groups = await (await get("/aggregate.csv?resource=edge&group_by=category&filter.id=-5")).text();
    expect(groups).toBe("category,count\r\n");
  });

  it("sorts by any output column, keeps the top N, skips with offset", async () => {
    const { get } = harness({ env });
    const all = csvRows(
      await (await get("/aggregate.csv?resource=edge&group_by=category&measures=count")).text(),
    ).slice(1);
    const top = csvRows(
      await (
        await get(
          "/aggregate.csv?resource=edge&group_by=category&measures=count&sort=count desc, category&limit=2&offset=1",
        )
      ).text(),
    );
    const expected = [...all].sort((a, b) => Number(b[1]) - Number(a[1]) || (a[0]! < b[0]! ? -1 : 1)).slice(1, 3);
    expect(top).toEqual([["category", "count"], ...expected]);
    expect(top).toHaveLength(3);
  });

  it("puts the group without a value last when the sort says nulls last, first by PostgreSQL's default", async () => {
    const { get } = harness({ env });
    const rows = async (sort: string): Promise<string[][]> =>
      csvRows(
        await (await get(`/aggregate.csv?resource=edge&group_by=amount&measures=count&sort=${sort}`)).text(),
      ).slice(1);
    const nullsFirst = await rows("amount desc");
    expect(nullsFirst[0]![0]).toBe("");
    const nullsLast = await rows("amount desc nulls last");
    expect(nullsLast).toEqual([...nullsFirst.slice(1), nullsFirst[0]]);
    expect((await rows("amount nulls first"))[0]![0]).toBe("");
  });

  it("heads columns with the data dictionary's labels and the function (header=label)", async () => {
    const { get } = harness({ env, emulator: { version: "2.12" } });
    const text = await (
      await get(
        "/aggregate.csv?resource=sample&group_by=category,month(created)&measures=count,sum(amount)&header=label&filter.id[lte]=100",
      )
    ).text();
    expect(text.split("\r\n")[0]).toBe("Program,Approved at (month),count,Amount (CAD) (sum)");
  });

  it("is refused past MAX_GROUPS, with a 400 naming the setting", async () => {
    const { get } = harness({ env: { ...env, MAX_GROUPS: "10" } });
    const response = await get("/aggregate.csv?resource=edge&group_by=id&errors=status");
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { message: string; parameter: string; setting: string } };
    expect(body.error.setting).toBe("MAX_GROUPS");
    expect(body.error.parameter).toBe("group_by");
    expect(body.error.message).toContain("more than 10 groups");
  });

  it("reads at most MAX_ROWS rows: past it a 400 naming the setting, whatever the format's own limit", async () => {
    const { get } = harness({ env: { ...env, MAX_ROWS: "1000" } });
    const response = await get("/aggregate.csv?resource=edge&group_by=category&errors=status");
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { message: string; parameter: string; setting: string } };
    expect(body.error.setting).toBe("MAX_ROWS");
    expect(body.error.message).toContain("More than 1000 rows match");
  });
});

describe("aggregate links, guarded as exports are", () => {
  it("with LINK_SIGNING_KEY: refused unsigned, signed by POST /links, served signed; CORS exposes X-Aggregated-By", async () => {
    const h = harness({ env: { ...env, LINK_SIGNING_KEY: "key-SECRET-1", ADMIN_TOKEN: "admin-SECRET-2" } });
    const link = "/aggregate.csv?resource=edge&group_by=category";
    expect((await h.get(`${link}&errors=status`)).status).toBe(403);
    const refused = await h.get("/links", {
      method: "POST",
      headers: { authorization: "Bearer admin-SECRET-2" },
      body: JSON.stringify({ link: `${link}&measures=nope` }),
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { parameter: string } }).error.parameter).toBe("measures");
    const signed = (await (
      await h.get("/links", {
        method: "POST",
        headers: { authorization: "Bearer admin-SECRET-2" },
        body: JSON.stringify({ link }),
      })
    ).json()) as { link: string };
    const response = await h.get(signed.link.replace("http://worker.test", ""), {
      headers: { origin: "https://dash.example" },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-expose-headers")).toContain("X-Aggregated-By");
    expect((await response.text()).split("\r\n")[0]).toBe("category,count");
  });
});

describe("bad aggregate links", () => {
  const cases: [string, string, RegExp][] = [
    ["group_by=nope", "group_by", /"nope", which is not a column/],
    ["measures=sum(nope)", "measures", /"nope", which is not a column/],
    ["group_by=month(category)", "group_by", /needs a date or timestamp column/],
    ["group_by=hour(day)", "group_by", /has no hours/],
    ["measures=sum(category)", "measures", /needs a numeric column/],
    ["measures=avg(created)", "measures", /needs a numeric column/],
    ["measures=median(amount)", "measures", /not a measure/],
    ["group_by=week(created)", "group_by", /unknown function "week"/],
    ["measures=count,,sum(amount)", "measures", /empty item/],
    ["group_by=category,", "group_by", /empty item/],
    ["group_by=meta", "group_by", /json/],
    ["measures=count(meta)", "measures", /json/],
    ["measures=max(active)", "measures", /min and max take/],
    ["group_by=category&sort=amount", "sort", /not a column of this aggregate/],
    [
      `group_by=${["id", "amount", "ratio", "category", "name", "note", "formula", "created", "day"].join(",")}`,
      "group_by",
      /at most|the most/,
    ],
    [
      `measures=${Array.from({ length: 17 }, (_, i) => (i === 0 ? "count" : `count(id)`)).join(",")}`,
      "measures",
      /the most/,
    ],
    ["measures=count,count", "measures", /twice/],
    ["fields=id", "fields", /for exports/],
    ["limit=-1", "limit", /whole number/],
    ["nope=1", "nope", /Unknown parameter/],
  ];
  it.each(cases)("%s: a 400 naming %s", async (query, parameter, message) => {
    const { get, calls } = harness({ env });
    const response = await get(`/aggregate.csv?resource=edge&errors=status&${query}`);
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { message: string; parameter: string } };
    expect(body.error.parameter).toBe(parameter);
    expect(body.error.message).toMatch(message);
    // At most the one request for the table's columns, never a page of rows.
    expect(calls.filter((c) => c.body.limit !== 0)).toHaveLength(0);
  });

  it("an export refuses group_by", async () => {
    const { get } = harness({ env });
    const response = await get("/export.csv?resource=edge&group_by=category&errors=status");
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { parameter: string } }).error.parameter).toBe("group_by");
  });
});
