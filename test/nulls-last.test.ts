import { describe, expect, it } from "vitest";
import { harness } from "./harness.ts";
import { bucket, runsHarness, sha256 } from "./snapshot-helpers.ts";

// `sort=amount desc nulls last`: CKAN's sort takes no NULLS clause and PostgreSQL puts nulls first
// in a descending sort; the worker moves them after the values itself.

/** The data lines of a CSV export (header dropped). */
const lines = (csv: string): string[] => csv.trimEnd().split("\r\n").slice(1);
/** `id,amount` lines whose amount is empty: the nulls. */
const isNull = (line: string): boolean => line.endsWith(",");
/** CKAN's order with its leading nulls moved after the values, each group in its own order. */
const nullsLast = (rows: string[]): string[] => [...rows.filter((r) => !isNull(r)), ...rows.filter(isNull)];

// Amounts are null where id is a multiple of 17 (5,882 of the sample's 100,000 rows).
const ALPHA = "/export.csv?resource=sample&fields=id,amount&filter.category=alpha";

for (const version of ["2.10", "2.12"] as const) {
  describe(`sort=... nulls last on CKAN ${version}`, () => {
    it("gives every matching row once, the values descending, then the rows without an amount", async () => {
      const { get } = harness({ emulator: { version } });
      const ckanOrder = lines(await (await get(`${ALPHA}&sort=amount desc`)).text());
      const res = await get(`${ALPHA}&sort=amount desc nulls last`);
      expect(res.status).toBe(200);
      const rows = lines(await res.text());
      expect(isNull(ckanOrder[0] ?? "")).toBe(true);
      expect(rows).toEqual(nullsLast(ckanOrder));
      expect(new Set(rows).size).toBe(ckanOrder.length);
      const firstNull = rows.findIndex(isNull);
      expect(firstNull).toBeGreaterThan(1000);
      expect(rows.slice(firstNull).every(isNull)).toBe(true);
    });

    it("finds where the nulls end on a site that caps pages lower than it asks (rows_max 500)", async () => {
      const { get } = harness({ emulator: { version, rowsMax: 500 } });
      const ckanOrder = lines(await (await get(`${ALPHA}&sort=amount desc`)).text());
      expect(lines(await (await get(`${ALPHA}&sort=amount desc nulls last`)).text())).toEqual(nullsLast(ckanOrder));
    });

    it("applies offset and limit across the whole result, over the boundary between values and nulls", async () => {
      const { get } = harness({ emulator: { version } });
      const all = nullsLast(lines(await (await get(`${ALPHA}&sort=amount desc`)).text()));
      const boundary = all.findIndex(isNull);
      for (const [offset, limit] of [
        [boundary - 5, 10],
        [boundary - 1500, 3000],
        [boundary + 7, 20],
        [0, 3],
      ] as const) {
        const rows = lines(
          await (await get(`${ALPHA}&sort=amount desc nulls last&offset=${offset}&limit=${limit}`)).text(),
        );
        expect(rows).toEqual(all.slice(offset, offset + limit));
      }
      const past = lines(await (await get(`${ALPHA}&sort=amount desc nulls last&offset=${all.length}`)).text());
      expect(past).toEqual([]);
    });

    it("is CKAN's own order on a column without nulls, and the table's order on rows that are all null", async () => {
      const { get } = harness({ emulator: { version } });
      const byCategory = "/export.csv?resource=sample&fields=id,category&filter.category=beta,gamma&limit=2500";
      const plain = await (await get(`${byCategory}&sort=category desc`)).text();
      expect(await (await get(`${byCategory}&sort=category desc nulls last`)).text()).toBe(plain);

      const onlyNulls = `/export.csv?resource=sample&fields=id,amount&filters=${encodeURIComponent(JSON.stringify({ id: [85, 17, 51, 34, 68] }))}`;
      const rows = lines(await (await get(`${onlyNulls}&sort=amount desc nulls last`)).text());
      expect(rows).toEqual(["17,", "34,", "51,", "68,", "85,"]);
      expect(lines(await (await get(`${onlyNulls}&sort=amount desc nulls last&offset=3`)).text())).toEqual([
        "68,",
        "85,",
      ]);
    });

    it("puts nulls first in an ascending sort when asked, past a first probe that holds no null", async () => {
      const { get } = harness({ emulator: { version } });
      const ckanOrder = lines(await (await get(`${ALPHA}&sort=amount`)).text());
      const rows = lines(await (await get(`${ALPHA}&sort=amount asc nulls first`)).text());
      expect(rows).toEqual([...ckanOrder.filter(isNull), ...ckanOrder.filter((r) => !isNull(r))]);
    });

    it("refuses a nulls clause it does not serve with a 400 naming sort", async () => {
      const { get } = harness({ emulator: { version } });
      for (const sort of [
        "amount desc, name nulls first",
        "amount desc nulls middle",
        "amount desc nulls",
        "nosuch desc nulls last",
      ]) {
        const res = await get(`/export.csv?resource=sample&sort=${encodeURIComponent(sort)}`);
        expect(res.status).toBe(400);
        const body = (await res.json()) as { error: { parameter: string; message: string } };
        expect(body.error.parameter).toBe("sort");
        expect(body.error.message).toMatch(/nulls|nosuch/);
      }
    });
  });
}

describe("sort=... nulls last beside the rest of the export", () => {
  it("counts the rows itself on CKAN 2.12, whose unfiltered count may lag behind the table", async () => {
    const { get, calls } = harness({ emulator: { version: "2.12", staleTotal: 700 } });
    // 94,118 amounts, then the 5,882 nulls in `_id` order: offset 98,000 is the 3,883rd null.
    const rows = lines(
      await (
        await get("/export.csv?resource=sample&fields=id,amount&sort=amount desc nulls last&offset=98000&limit=300")
      ).text(),
    );
    expect(rows).toEqual(Array.from({ length: 300 }, (_, i) => `${17 * (3883 + i)},`));
    // Finding the split asks CKAN for the sort column only, a few pages of it, then the rows themselves.
    const probes = calls.filter((c) => JSON.stringify(c.body.fields) === '["amount"]');
    expect(probes.length).toBeGreaterThan(1);
    expect(probes.length).toBeLessThanOrEqual(10);
    expect(calls.at(-1)?.body).toMatchObject({ offset: 3882, limit: 300, sort: "amount desc, _id" });
  });

  it("holds MAX_ROWS and SUBREQUEST_LIMIT over both parts, the split's requests included", async () => {
    const limited = harness({ env: { MAX_ROWS: "19500" } });
    const tooMany = await limited.get(`${ALPHA}&sort=amount desc nulls last`);
    expect(tooMany.status).toBe(400);
    expect(((await tooMany.json()) as { error: { parameter: string; message: string } }).error).toMatchObject({
      parameter: "limit",
      message: expect.stringContaining("20000"),
    });

    // The least budget the plain sort fits in: the split's one probe more is refused before the first byte.
    const within = async (limit: number, sort: string): Promise<Response> =>
      harness({ env: { SUBREQUEST_LIMIT: String(limit) } }).get(`${ALPHA}&sort=${sort}`);
    let needed = 30;
    expect((await within(needed, "amount desc")).status).toBe(200);
    while ((await within(needed - 1, "amount desc")).status === 200) needed--;
    const refused = await within(needed, "amount desc nulls last");
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain("SUBREQUEST_LIMIT");
    expect((await within(needed + 1, "amount desc nulls last")).status).toBe(200);
  });

  it("describes the export for HEAD, and writes JSON in the same order", async () => {
    const { get } = harness({ emulator: { version: "2.10" } });
    const head = await get(`${ALPHA}&sort=amount desc nulls last`, { method: "HEAD" });
    expect(head.status).toBe(200);
    const csv = lines(await (await get(`${ALPHA}&sort=amount desc nulls last&limit=50&offset=18800`)).text());
    const json = (await (
      await get(`${ALPHA.replace(".csv", ".json")}&sort=amount desc nulls last&limit=50&offset=18800`)
    ).json()) as { id: number }[];
    expect(json.map((row) => String(row.id))).toEqual(csv.map((line) => line.split(",")[0]));
  });

  it("goes on where the last step stopped in a snapshot run, across the values and the nulls", async () => {
    const { h } = runsHarness(
      { name: "nulls", resource: "sample", sort: "amount desc nulls last", q: "alpha", formats: ["csv", "json"] },
      undefined,
      { inline: true },
    );
    expect(await h.scheduled("0 3 * * *", Date.UTC(2026, 10, 20, 3, 0, 0))).toMatchObject([
      { status: "ok", written: [{ format: "csv" }, { format: "json" }] },
    ]);
    for (const format of ["csv", "json"]) {
      const snapshot = await sha256(await (await bucket.get(`nulls/20261120T030000Z.${format}`))!.arrayBuffer());
      const live = await h.get(`/export.${format}?resource=sample&sort=amount%20desc%20nulls%20last&q=alpha`);
      expect(snapshot, format).toBe(await sha256(await live.arrayBuffer()));
    }
    // Each step finds the split again, then reads from the rows written so far.
    const splits = h.calls.filter((c) => JSON.stringify(c.body.fields) === '["amount"]' && c.body.offset === 0);
    expect(splits.length).toBeGreaterThan(2);
    const csv = lines(new TextDecoder().decode(await (await bucket.get("nulls/20261120T030000Z.csv"))!.arrayBuffer()));
    expect(csv.at(-1)?.split(",")[1]).toBe("");
  });
});
