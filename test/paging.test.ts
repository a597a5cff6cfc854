import Papa from "papaparse";
import { describe, expect, it } from "vitest";
import { harness, isProbe, pageCalls, readAll } from "./harness.ts";

const ids = (csv: string): number[] => csv.trimEnd().split("\r\n").slice(1).map(Number);
const range = (from: number, count: number): number[] => Array.from({ length: count }, (_, i) => from + i);

/** CKAN's answer (the emulator's) to a search, asked as given: what a fault answers instead. */
const searched = (body: Record<string, unknown>): Promise<Response> =>
  harness().emulator.fetch(
    new Request("http://ckan.test/api/action/datastore_search", { method: "POST", body: JSON.stringify(body) }),
  );

describe("paging", () => {
  it("starts with a small page, then pages sized by bytes up to PAGE_SIZE", async () => {
    const { get, calls } = harness({ emulator: { version: "2.12" }, env: { PAGE_SIZE: "32000" } });
    const text = await (await get("/export.csv?resource=sample&limit=40000&fields=id")).text();
    expect(ids(text)).toEqual(range(1, 40000));
    // Pages that large start with a range of half a page: it comes back before the ranges asked beside it.
    expect(pageCalls(calls).map((c) => c.body.limit)).toEqual([1000, 16000, 23000]);
  });

  it("keeps UPSTREAM_CONCURRENCY offset pages in flight when the total is known, and writes them in order", async () => {
    let open = 0;
    let most = 0;
    const { get, calls } = harness({
      env: { PAGE_SIZE: "500", UPSTREAM_CONCURRENCY: "3", BUFFER_BYTES: "0" },
      fault: async (n, body) => {
        if (n <= 1) return undefined; // the first page
        open++;
        most = Math.max(most, open);
        // Later pages answer sooner: only strict ordering keeps the rows in order.
        await new Promise((resolve) => setTimeout(resolve, 40 - ((body.offset as number) / 500) * 3));
        open--;
        return undefined;
      },
    });
    const text = await (await get(`/export.csv?resource=sample&limit=6000&offset=7&fields=id`)).text();
    expect(ids(text)).toEqual(range(8, 6000));
    expect(most).toBe(3);
    const offsets = calls.slice(1).map((c) => c.body.offset);
    expect(offsets).toEqual(range(0, 11).map((i) => 507 + i * 500));
    expect(calls.slice(1).every((c) => c.body.include_total === false)).toBe(true);
  });

  it("on CKAN 2.12 keeps UPSTREAM_CONCURRENCY _id ranges in flight, written in table order, whatever the _id gaps", async () => {
    let open = 0;
    let most = 0;
    const h = harness({
      emulator: { version: "2.12" },
      env: { PAGE_SIZE: "500", UPSTREAM_CONCURRENCY: "3", BUFFER_BYTES: "0" },
      fault: async (n, body) => {
        if (n <= 1 || isProbe(body)) return undefined;
        open++;
        most = Math.max(most, open);
        // Later ranges answer sooner: only strict ordering keeps the rows in order.
        const range = (body.filters as { _id: { gt: number } })._id;
        await new Promise((resolve) => setTimeout(resolve, Math.max(1, 40 - range.gt / 200)));
        open--;
        return undefined;
      },
    });
    // A filter leaves the matching _ids far apart and uneven: ranges are sized by density, and every row still comes once.
    const path = "/export.csv?resource=sample&filter.category=alpha&fields=id,category&limit=6000";
    const byRanges = await (await h.get(path)).text();
    const byOffset = await (await harness({ env: { PAGE_SIZE: "500" } }).get(path)).text();
    expect(byRanges).toBe(byOffset);
    expect(byRanges.trimEnd().split("\r\n")).toHaveLength(6001);
    expect(most).toBe(3);
    const later = pageCalls(h.calls.slice(1));
    expect(later.every((c) => c.body.offset === undefined && c.body.include_total === false)).toBe(true);
    expect(later.every((c) => (c.body.filters as Record<string, unknown>).category === "alpha")).toBe(true);
  });

  it("before CKAN 2.12 pages deep offsets as UPSTREAM_CONCURRENCY `_id` lists in flight, written in table order", async () => {
    let open = 0;
    let most = 0;
    const h = harness({
      env: { PAGE_SIZE: "200", UPSTREAM_CONCURRENCY: "3", BUFFER_BYTES: "0" },
      fault: async (n, body) => {
        if (n <= 1 || isProbe(body)) return undefined;
        open++;
        most = Math.max(most, open);
        // Later lists answer sooner: only strict ordering keeps the rows in order.
        const first = (body.filters as { _id: number[] })._id[0]!;
        await new Promise((resolve) => setTimeout(resolve, Math.max(1, 40 - first / 200)));
        open--;
        return undefined;
      },
    });
    // 40,000 rows in pages of 200: offsets would re-read about 4 million rows, lists name 39,800 `_id`s
    // (CKAN charges one as up to 87 rows re-read: bench/ckan/LIST-FILTER.md).
    const text = await (await h.get("/export.csv?resource=sample&limit=40000&offset=7&fields=id")).text();
    expect(ids(text)).toEqual(range(8, 40000));
    expect(most).toBe(3);
    // The first page by offset, with `_id` to go on from (the link's fields leave it out of the CSV).
    const firstPage = h.calls.find((c) => c.body.include_total === true && c.body.include_next_page === undefined);
    expect(firstPage?.body).toMatchObject({ offset: 7, fields: ["id", "_id"] });
    const later = pageCalls(h.calls.slice(2));
    expect(later.every((c) => c.body.offset === undefined && c.body.include_total === false)).toBe(true);
    // Each page lists the `_id`s after the one before it, none twice, none left out.
    const listed = later.flatMap((c) => (c.body.filters as { _id: number[] })._id);
    expect(listed).toEqual(range(208, listed.length));
    expect(listed.length).toBe(39800);
  });

  it("before CKAN 2.12 lists `_id`s only where that costs CKAN less: shallow or sparse by offset, deep and dense by lists", async () => {
    const byCategories = (n: number, limit: number): string =>
      `/export.csv?resource=sample${["alpha", "beta", "gamma", "delta"]
        .slice(0, n)
        .map((c) => `&filter.category=${c}`)
        .join("")}&fields=id,category&limit=${limit}`;
    const paged = async (path: string) => {
      const h = harness({ env: { PAGE_SIZE: "200", UPSTREAM_CONCURRENCY: "3" } });
      const text = await (await h.get(path)).text();
      return { text, later: pageCalls(h.calls.slice(2)) };
    };
    const byOffset = (later: { body: Record<string, unknown> }[]) =>
      later.every((c) => typeof c.body.offset === "number");
    // Shallow: 3,000 rows are cheaper by offset, every `_id` a row or not.
    const shallow = await paged("/export.csv?resource=sample&fields=id&limit=3000");
    expect(shallow.text.trimEnd().split("\r\n")).toHaveLength(3001);
    expect(byOffset(shallow.later)).toBe(true);
    // Deep but sparse: two categories of five leave 40% of the `_id`s rows.
    const sparse = await paged(byCategories(2, 40000));
    expect(sparse.text.trimEnd().split("\r\n")).toHaveLength(40001);
    expect(byOffset(sparse.later)).toBe(true);
    // Deep and dense: four categories of five, gaps in the `_id`s, every matching row once, as offsets give them.
    const path = byCategories(4, 60000);
    const dense = await paged(path);
    const sorted = await (await harness({ env: { PAGE_SIZE: "2000" } }).get(`${path}&sort=id`)).text();
    expect(dense.text).toBe(sorted);
    expect(dense.text.trimEnd().split("\r\n")).toHaveLength(60001);
    const later = dense.later;
    expect(later.every((c) => Array.isArray((c.body.filters as { _id: unknown })._id))).toBe(true);
    expect(later.every((c) => (c.body.filters as { category: string[] }).category.length === 4)).toBe(true);
  });

  for (const { title, pageSize, link, rows, pages } of [
    {
      // CKAN re-reads 1,300 + 2,300 + 3,300 rows before the full pages, where the short page last
      // would have it re-read 2,000 + 3,000 + 4,000.
      title:
        "before CKAN 2.12 asks the short page CKAN's count leaves right after the first, not at the deepest offset",
      pageSize: 1000,
      link: "limit=4300&fields=id",
      rows: 4300,
      pages: [[1000, 300], ...range(0, 3).map((k) => [1300 + k * 1000, 1000])],
    },
    {
      // Pages of rows (the decimal comma): 5 full pages and 1 row after the first page.
      title: "does not shrink the pages after a short page of one row: its answer's envelope is not what a row costs",
      pageSize: 5000,
      link: "limit=26001&fields=id&delimiter=%3B&decimal=,",
      rows: 26001,
      pages: [[1000, 1], ...range(0, 5).map((k) => [1001 + k * 5000, 5000])],
    },
  ]) {
    it(title, async () => {
      const { get, calls } = harness({ env: { PAGE_SIZE: String(pageSize), UPSTREAM_CONCURRENCY: "3" } });
      const text = await (await get(`/export.csv?resource=sample&${link}`)).text();
      expect(ids(text)).toEqual(range(1, rows));
      expect(pageCalls(calls).map((c) => [c.body.offset, c.body.limit])).toEqual([[0, 1000], ...pages]);
    });
  }

  it("before CKAN 2.12 counts again with the last page, instead of one more page at the deepest offset", async () => {
    // A decimal comma writes rows, not CKAN's CSV as it comes: no page from the table's end, whose last
    // page would stand in for the count (below).
    const path = "/export.tsv?resource=sample&filter.category=alpha&fields=id,amount&decimal=,";
    const env = { PAGE_SIZE: "1000", UPSTREAM_CONCURRENCY: "3" };
    const expected = await (await harness({ env }).get(path)).text();
    const total = expected.trimEnd().split("\r\n").length - 1;
    // The last three pages (the window) are held until the count is asked: it must not wait for a slot.
    const held = new Set<() => void>();
    let fallback: ReturnType<typeof setTimeout> | undefined;
    let heldAtCount = -1;
    const { get, calls } = harness({
      env,
      fault: (n, body) => {
        if (n <= 1) return undefined;
        if (body.limit === 0) {
          heldAtCount = held.size;
          for (const release of held) release();
          return undefined;
        }
        // The last pages in table order: by offset, or (past the middle) from the table's end.
        const fromEnd = body.sort === "_id desc";
        // (A page from the end asks the row before it too: its own rows are one fewer than it asks.)
        const last = fromEnd
          ? (body.offset as number) < 3 * ((body.limit as number) - 1)
          : (body.offset as number) >= total - 3000;
        if (!last || heldAtCount >= 0) return undefined;
        // Without the count, a slot only frees once these are answered: all let go together after a while.
        fallback ??= setTimeout(() => {
          for (const release of held) release();
        }, 2000);
        return new Promise<undefined>((resolve) => {
          const release = (): void => {
            held.delete(release);
            resolve(undefined);
          };
          held.add(release);
        });
      },
    });
    const text = await (await get(path)).text();
    clearTimeout(fallback);
    expect(text).toBe(expected);
    expect(total).toBeGreaterThan(15_000);
    // Asked with the last page while the window's pages were all still out (its own hook may run first).
    expect(heldAtCount).toBeGreaterThanOrEqual(2);
    const later = calls.slice(1).filter((c) => c.body.limit !== 0);
    // Pages up to CKAN's count, none past it; beside them, one count of no rows.
    expect(Math.max(...later.map((c) => c.body.offset as number))).toBeLessThan(total);
    expect(calls.filter((c) => c.body.limit === 0).map((c) => c.body.include_total)).toEqual([true]);
    expect(later.every((c) => c.body.sort === "_id" && typeof c.body.offset === "number")).toBe(true);
  });

  describe("before CKAN 2.12, pages past the table's middle asked from its end", () => {
    // A filter leaves the matching `_id`s far apart: the pages' checks must not rely on `_id`s being dense.
    const path = (format: string): string =>
      `/export.${format}?resource=sample&filter.category=alpha&fields=id,category,amount`;
    const env = { PAGE_SIZE: "1000", UPSTREAM_CONCURRENCY: "3" };
    const fromEnd = (calls: { body: Record<string, unknown> }[]) =>
      calls.filter((c) => c.body.sort === "_id desc" && c.body.limit !== 1);
    /** The first search `when` matches answered as `as` would be: the table changed since CKAN counted it. */
    const changedOnce = (
      when: (body: Record<string, unknown>) => boolean,
      as: (body: Record<string, unknown>) => Record<string, unknown>,
    ) => {
      let changed = 0;
      const asked = harness({
        env,
        fault: async (_n, body) => {
          if (changed > 0 || !when(body)) return undefined;
          changed = 1;
          return searched(as(body));
        },
      });
      return { ...asked, changed: () => changed };
    };

    for (const format of ["csv", "json", "ndjson", "xlsx"]) {
      it(`write every row once, in table order, as paging by offset would (${format})`, async () => {
        // `sort=_id` is the same order, paged by offset only.
        const byOffset = harness({ env });
        const expected = new Uint8Array(await (await byOffset.get(`${path(format)}&sort=_id`)).arrayBuffer());
        expect(fromEnd(byOffset.calls)).toEqual([]);
        const { get, calls } = harness({ env });
        const got = new Uint8Array(await (await get(path(format))).arrayBuffer());
        expect(got).toEqual(expected);
        const total = ids(await (await harness({ env }).get(`${path("csv")}&sort=_id`)).text()).length;
        const asked = fromEnd(calls);
        expect(asked.length).toBeGreaterThan(3);
        for (const call of asked) {
          // Rows nearer the end than the start, and the row before them to check they follow on.
          const count = (call.body.limit as number) - 1;
          const offset = total - (call.body.offset as number) - count;
          expect(call.body.offset as number).toBeLessThan(offset);
          expect((call.body.fields as string[]).at(-1)).toBe("_id");
        }
      });
    }

    it("ask a page again by offset when the row before it is not where it should be (rows added since the count), and no more from the end", async () => {
      const expected = ids(await (await harness({ env }).get(`${path("csv")}&sort=_id`)).text());
      // One matching row added at the end after CKAN counted: every offset from the end moves by one.
      const { get, calls, changed } = changedOnce(
        (body) => body.sort === "_id desc" && body.limit !== 1,
        (body) => ({ ...body, offset: (body.offset as number) - 1 }),
      );
      expect(ids(await (await get(path("csv"))).text())).toEqual(expected);
      expect(changed()).toBe(1);
      const turned = calls.findIndex((c) => c.body.sort === "_id desc" && c.body.limit !== 1);
      const first = calls[turned]!.body;
      const total = expected.length;
      const offset = total - (first.offset as number) - ((first.limit as number) - 1);
      // Asked again by offset; from then on, only pages already in flight had been asked from the end.
      expect(calls.some((c) => c.body.sort === "_id" && c.body.offset === offset)).toBe(true);
      expect(fromEnd(calls).length).toBeLessThanOrEqual(3);
    });

    it("are not asked where the subrequests one request may make would not cover asking them again", async () => {
      // 20,021 rows: the first page and 20 more by offset, the count beside them; from the end, pages
      // a row shorter and the window's pages asked again would need 26.
      const { get, calls } = harness({ env: { ...env, SUBREQUEST_LIMIT: "24" } });
      const expected = ids(await (await harness({ env }).get(`${path("csv")}&sort=_id`)).text());
      expect(ids(await (await get(path("csv"))).text())).toEqual(expected);
      expect(fromEnd(calls)).toEqual([]);
      const roomy = harness({ env: { ...env, SUBREQUEST_LIMIT: "26" } });
      expect(ids(await (await roomy.get(path("csv"))).text())).toEqual(expected);
      expect(fromEnd(roomy.calls).length).toBeGreaterThan(0);
    });

    it("ask no count beside a last page from the table's end: it follows on from the rows before it only if the count still holds", async () => {
      const expected = ids(await (await harness({ env }).get(`${path("csv")}&sort=_id`)).text());
      const { get, calls } = harness({ env });
      expect(ids(await (await get(path("csv"))).text())).toEqual(expected);
      // Lists would not pay here: the pages carry only the `_id` a page from the table's end is checked by.
      expect(calls.slice(1).every((c) => (c.body.fields as string[]).join() === "id,category,amount,_id")).toBe(true);
      expect(fromEnd(calls).some((c) => c.body.offset === 0)).toBe(true);
      expect(calls.filter((c) => c.body.limit === 0)).toEqual([]);
    });

    it("count again when the last page from the table's end does not follow on", async () => {
      const expected = ids(await (await harness({ env }).get(`${path("csv")}&sort=_id`)).text());
      // The table's last row removed after CKAN counted: the last page ends one row earlier.
      const { get, calls, changed } = changedOnce(
        (body) => body.sort === "_id desc" && body.offset === 0,
        (body) => ({ ...body, offset: 1 }),
      );
      expect(ids(await (await get(path("csv"))).text())).toEqual(expected);
      expect(changed()).toBe(1);
      const last = calls.findIndex((c) => c.body.sort === "_id desc" && c.body.offset === 0);
      // Asked again by offset, and the count with it: rows past it would be read.
      expect(
        calls
          .slice(last)
          .filter((c) => c.body.limit === 0)
          .map((c) => c.body.include_total),
      ).toEqual([true]);
      expect(fromEnd(calls.slice(last + 1))).toEqual([]);
    });

    it("count again when a page from the end before the last does not follow on while the last is out", async () => {
      const expected = ids(await (await harness({ env }).get(`${path("csv")}&sort=_id`)).text());
      // One matching row added at the end after CKAN counted, seen by the page before the last.
      const { get, calls, changed } = changedOnce(
        (body) =>
          body.sort === "_id desc" &&
          (body.offset as number) > 0 &&
          (body.offset as number) < 2 * ((body.limit as number) - 1),
        (body) => ({ ...body, offset: (body.offset as number) - 1 }),
      );
      expect(ids(await (await get(path("csv"))).text())).toEqual(expected);
      expect(changed()).toBe(1);
      const last = calls.findIndex((c) => c.body.sort === "_id desc" && c.body.offset === 0);
      const counts = calls.flatMap((c, k) => (c.body.limit === 0 ? [k] : []));
      // The last page was out, from the end, with no count beside it: the count is asked after all.
      expect(last).toBeGreaterThan(0);
      expect(counts).toHaveLength(1);
      expect(counts[0]).toBeGreaterThan(last);
    });

    it("let the connections of the pages from the end they ask again go, never leaving them unread", async () => {
      const expected = ids(await (await harness({ env }).get(`${path("csv")}&sort=_id`)).text());
      let answered = 0;
      const bodies: { state: "unread" | "reading" | "read" | "cancelled" }[] = [];
      const { get } = harness({
        env,
        fault: async (_n, body) => {
          if (body.sort !== "_id desc" || body.limit === 1) return undefined;
          const first = answered++ === 0;
          // The first page from the end comes late and does not follow on: the others are in flight by then.
          if (first) await new Promise((resolve) => setTimeout(resolve, 100));
          const asked = first ? { ...body, offset: (body.offset as number) - 1 } : body;
          const upstream = await searched(asked);
          const entry: (typeof bodies)[number] = { state: "unread" };
          bodies.push(entry);
          const reader = upstream.body!.getReader();
          const stream = new ReadableStream<Uint8Array>(
            {
              async pull(controller) {
                entry.state = "reading";
                const { done, value } = await reader.read();
                if (done) {
                  entry.state = "read";
                  controller.close();
                } else controller.enqueue(value);
              },
              cancel() {
                entry.state = "cancelled";
              },
            },
            { highWaterMark: 0 },
          );
          return new Response(stream, { headers: upstream.headers, status: upstream.status });
        },
      });
      expect(ids(await (await get(path("csv"))).text())).toEqual(expected);
      expect(bodies.length).toBeGreaterThan(1);
      expect(bodies.filter((b) => b.state === "unread" || b.state === "reading")).toEqual([]);
    });
  });

  it("before CKAN 2.12 still reads rows added past CKAN's count, once counting again says they are there", async () => {
    const { get, calls } = harness({
      env: { PAGE_SIZE: "500", UPSTREAM_CONCURRENCY: "3" },
      fault: async (_n, body) => {
        if (body.include_total !== true || body.limit === 0) return undefined;
        // The first page's count was taken before 1,000 more rows were added.
        const answer = (await (await searched(body)).json()) as { result: Record<string, unknown> };
        return Response.json({ ...answer, result: { ...answer.result, total: 2000 } });
      },
    });
    const text = await (await get("/export.csv?resource=sample&fields=id&limit=3000")).text();
    expect(ids(text)).toEqual(range(1, 3000));
    expect(calls.filter((c) => c.body.limit === 0)).toHaveLength(1);
    const offsets = calls.map((c) => c.body.offset as number);
    // Pages of a row fewer than PAGE_SIZE: those past the table's middle could go from its end (see below).
    expect(offsets.filter((o) => o >= 2000)).toEqual([2000, 2499, 2998]);
  });

  it("before CKAN 2.12 lists on past the probe's largest `_id` when it grew meanwhile", async () => {
    let probes = 0;
    const { get, calls } = harness({
      env: { PAGE_SIZE: "200", UPSTREAM_CONCURRENCY: "3" },
      fault: (_n, body) => {
        // The first probe saw the table before the rows after `_id` 30,000 were added.
        if (!isProbe(body) || ++probes > 1) return undefined;
        return Response.json({
          success: true,
          result: { fields: [{ id: "_id", type: "int" }], records: [[30000]], limit: 1 },
        });
      },
    });
    const text = await (await get("/export.csv?resource=sample&fields=id&limit=40000")).text();
    expect(ids(text)).toEqual(range(1, 40000));
    expect(probes).toBe(2);
    const listed = pageCalls(calls).flatMap((c) => {
      const id = (c.body.filters as { _id?: unknown } | undefined)?._id;
      return Array.isArray(id) ? (id as number[]) : [];
    });
    expect(listed).toEqual(range(201, 39800));
  });

  it("fills the gaps when the site caps pages lower than asked, even with pages in flight", async () => {
    const { get, calls } = harness({
      emulator: { rowsMax: 300 },
      env: { PAGE_SIZE: "1000", UPSTREAM_CONCURRENCY: "3" },
    });
    const text = await (await get("/export.csv?resource=sample&limit=2500&fields=id")).text();
    expect(ids(text)).toEqual(range(1, 2500));
    expect(calls.slice(1).every((c) => (c.body.limit as number) <= 300)).toBe(true);
  });

  it("counts rows instead of trusting an estimated total, one page at a time", async () => {
    const { get, calls } = harness({
      env: { PAGE_SIZE: "1000", UPSTREAM_CONCURRENCY: "3" },
      fault: (n, body) => {
        if (n !== 1) return undefined;
        // The first real page: CKAN says its total is an estimate, and a low one.
        return Response.json({
          success: true,
          result: {
            fields: [
              { id: "_id", type: "int" },
              { id: "id", type: "int4" },
            ],
            records: Array.from({ length: 1000 }, (_, i) => [i + 1, i + 1]),
            limit: body.limit,
            total: 1500,
            total_was_estimated: true,
          },
        });
      },
    });
    const text = await (await get("/export.csv?resource=sample&filter.category=alpha&fields=id&limit=4000")).text();
    expect(text.trimEnd().split("\r\n")).toHaveLength(4001);
    expect(calls.slice(1).map((c) => c.body.offset)).toEqual([1000, 2000, 3000]);
  });
});

describe("CSV pass-through against the row encoder", () => {
  it("gives the same CSV, byte for byte, with and without it", async () => {
    const query = "/export.csv?resource=sample&limit=5000&q=glacier";
    const on = harness({ env: { PAGE_SIZE: "700" } });
    const off = harness({ env: { PAGE_SIZE: "700", CSV_PASSTHROUGH: "false" } });
    const [a, b] = [await (await on.get(query)).text(), await (await off.get(query)).text()];
    expect(pageCalls(on.calls.slice(1)).every((c) => c.body.records_format === "csv")).toBe(true);
    // q without fields: the first page comes as objects (CKAN's lists would be a 409), the rest as lists.
    expect(off.calls.map((c) => c.body.records_format)).toEqual(["objects", ...off.calls.slice(1).map(() => "lists")]);
    expect(pageCalls(on.calls).length).toBeGreaterThan(2);
    const { default: Papa } = await import("papaparse");
    expect(Papa.parse(a.trimEnd(), { newline: "\r\n" }).data).toHaveLength(5001);
    expect(a).toBe(b);
  });

  it("falls back to rows when the upstream ignores records_format=csv", async () => {
    const { get } = harness({
      env: { PAGE_SIZE: "500" },
      fault: async (_, body) => {
        if (body.records_format !== "csv") return undefined;
        const lists = await searched({ ...body, records_format: "lists" });
        return lists;
      },
    });
    const text = await (await get("/export.csv?resource=sample&limit=1700&fields=id")).text();
    expect(ids(text)).toEqual(range(1, 1700));
  });
});

describe("paging limits and failures", () => {
  it("holds MAX_ROWS when CKAN only estimates the count, ending the download as incomplete", async () => {
    const { get } = harness({
      env: { MAX_ROWS: "1500", PAGE_SIZE: "500", BUFFER_BYTES: "0" },
      fault: async (n, body) => {
        if (n !== 1) return undefined;
        const answer = (await (await searched(body)).json()) as { result: Record<string, unknown> };
        return Response.json({ ...answer, result: { ...answer.result, total: 900, total_was_estimated: true } });
      },
    });
    const res = await get("/export.csv?resource=sample&fields=id");
    const { text, error } = await readAll(res);
    expect(error).toBeDefined();
    const rows = Papa.parse<string[]>(text.trimEnd(), { newline: "\r\n" }).data;
    expect(rows.at(-1)![0]).toMatch(/^#EXPORT INCOMPLETE: More than 1500 rows match/);
    expect(rows.length - 2).toBeLessThanOrEqual(1500);
  });

  it("stops the pages still in flight when one fails", async () => {
    const { get, calls } = harness({
      env: { PAGE_SIZE: "500", UPSTREAM_CONCURRENCY: "3", UPSTREAM_RETRIES: "0", BUFFER_BYTES: "0" },
      fault: async (n, body) => {
        if (n < 2 || isProbe(body)) return undefined;
        // The first of the pages asked together fails; the others are still on their way.
        if (pageCalls(calls.slice(2)).length === 1) return new Response("down", { status: 500 });
        await new Promise((resolve) => setTimeout(resolve, 100));
        return undefined;
      },
    });
    const res = await get("/export.csv?resource=sample&limit=5000&fields=id");
    const { error } = await readAll(res);
    expect(error).toBeDefined();
    const inFlight = pageCalls(calls.slice(2)).slice(1);
    expect(inFlight.length).toBeGreaterThan(0);
    expect(inFlight.every((c) => c.signal.aborted)).toBe(true);
  });
});
