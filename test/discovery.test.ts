import { env as testEnv } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { EMULATOR_RESOURCES } from "../emulator/index.ts";
import { verifyLink } from "../src/security/signature.ts";
import { harness } from "./harness.ts";

type Column = { id: string; type: string; label?: string; description?: string; values?: unknown[]; distinct?: number };
type Detail = {
  name: string;
  rows: number;
  columns: Column[];
  examples: { title: string; url: string }[];
  range_filters: boolean | null;
  max_rows: number;
};
type ErrorBody = { error: { status: number; message: string; parameter?: string; docs?: string } };

const ADMIN = "admin-token-for-discovery";
const KEY = "signing-key-for-discovery-0123456789";

describe("GET /resources", () => {
  it("lists every published alias with its row count and links", async () => {
    const { get } = harness();
    const res = await get("/resources");
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      resources: { name: string; resource_id: string; rows: number; links: Record<string, string> }[];
      max_rows: number;
    };
    expect(body.resources.map((r) => [r.name, r.resource_id, r.rows])).toEqual([
      ["sample", EMULATOR_RESOURCES.sample, 100_000],
      ["private", EMULATOR_RESOURCES.private, 50],
      ["big", EMULATOR_RESOURCES.big, 1_000_000],
      ["edge", EMULATOR_RESOURCES.edge, 4321],
    ]);
    expect(body.resources[0]!.links).toEqual({
      self: "http://worker.test/resources/sample",
      page: "http://worker.test/?resource=sample",
      csv: "http://worker.test/export.csv?resource=sample&limit=100",
    });
    expect(body.max_rows).toBe(1_000_000);
  });

  it("names and describes each resource as CKAN's resource_show does, asked without the token", async () => {
    const { get, calls } = harness();
    const body = (await (await get("/resources")).json()) as {
      resources: { name: string; title?: string; description?: string }[];
    };
    expect(body.resources.find((r) => r.name === "sample")).toMatchObject({
      title: "Sample grants",
      description: expect.stringContaining("100,000"),
    });
    // The private resource is private to anonymous callers: no name is known, and that is not an error.
    expect(body.resources.find((r) => r.name === "private")?.title).toBeUndefined();
    const shows = calls.filter((c) => c.url.includes("/resource_show"));
    expect(shows.length).toBeGreaterThan(0);
    expect(shows.every((c) => c.authorization === null && c.method === "GET")).toBe(true);
  });

  it("keeps a resource CKAN refuses in the list, with the reason", async () => {
    const { get } = harness({ env: { CKAN_API_TOKEN: undefined, ALLOW_UNLISTED_RESOURCES: "false" } });
    const body = (await (await get("/resources")).json()) as {
      resources: { name: string; error?: { status: number } }[];
    };
    expect(body.resources.find((r) => r.name === "private")?.error?.status).toBe(403);
  });
});

describe("GET /resources/<alias>", () => {
  it("gives the columns in CKAN's order, the count, values of few-valued columns and working examples", async () => {
    const { get } = harness();
    const res = await get("/resources/sample");
    expect(res.status).toBe(200);
    const body = (await res.json()) as Detail;
    expect(body.rows).toBe(100_000);
    expect(body.columns.map((c) => `${c.id}:${c.type}`)).toEqual([
      "id:int4",
      "amount:numeric",
      "ratio:float8",
      "category:text",
      "name:text",
      "note:text",
      "formula:text",
      "created:timestamp",
      "active:bool",
    ]);
    const byId = Object.fromEntries(body.columns.map((c) => [c.id, c]));
    expect(byId.category!.values).toEqual(["alpha", "beta", "delta", "epsilon", "gamma"]);
    expect(byId.active!.values).toEqual([false, true]);
    expect(byId.id!.values).toBeUndefined();
    expect(byId.id!.distinct).toBe(100_000);
    expect(byId.amount!.distinct).toBeUndefined();
    expect(body.examples.length).toBeGreaterThanOrEqual(4);
    for (const example of body.examples) {
      const answer = await get(example.url.replace("http://worker.test", ""));
      expect(answer.status, example.title).toBe(200);
      await answer.body?.cancel();
    }
    expect(body.examples.map((e) => e.url)).toContain(
      "http://worker.test/export.csv?resource=sample&filter.category=alpha&limit=10",
    );
    // Aggregates too: rows per few-valued column, a numeric column per month, its totals.
    expect(body.examples.map((e) => e.url)).toEqual(
      expect.arrayContaining([
        "http://worker.test/aggregate.csv?resource=sample&group_by=category",
        "http://worker.test/aggregate.csv?resource=sample&group_by=month(created)&measures=count,sum(amount)",
        "http://worker.test/aggregate.json?resource=sample&measures=count,sum(amount),avg(amount),min(amount),max(amount)",
      ]),
    );
  });

  it("passes on the data dictionary's label and notes", async () => {
    const { get } = harness({
      fault: async (_, body) => {
        if (body.limit !== 0) return undefined;
        return Response.json({
          success: true,
          result: {
            fields: [
              { id: "_id", type: "int" },
              {
                id: "amount",
                type: "numeric",
                info: { label: "Amount (CAD)", notes: "Paid, taxes included.", type_override: "" },
              },
              { id: "category", type: "text", info: { label: "", notes: "" } },
            ],
            records: [],
            total: 7,
          },
        });
      },
    });
    const body = (await (await get("/resources/sample")).json()) as Detail;
    expect(body.columns.slice(0, 2)).toEqual([
      { id: "amount", type: "numeric", label: "Amount (CAD)", description: "Paid, taxes included." },
      { id: "category", type: "text", distinct: 5, values: ["alpha", "beta", "delta", "epsilon", "gamma"] },
    ]);
  });

  it("still answers when CKAN refuses distinct: the columns just have no values", async () => {
    const { get } = harness({
      fault: (_, body) =>
        body.distinct === true
          ? Response.json(
              { success: false, error: { __type: "Validation Error", distinct: ["The parameter is not allowed"] } },
              { status: 409 },
            )
          : undefined,
    });
    const res = await get("/resources/sample");
    expect(res.status).toBe(200);
    const body = (await res.json()) as Detail;
    expect(body.columns.every((c) => c.values === undefined && c.distinct === undefined)).toBe(true);
  });

  it("says when CKAN failed to answer a probe for values, and keeps that answer in no cache", async () => {
    let failing = true;
    const h = harness({
      emulator: { version: "2.12" },
      env: { CACHE_TTL_SECONDS: "300", UPSTREAM_RETRIES: "0" },
      fault: (_, body) => (failing && body.distinct === true ? new Response("down", { status: 503 }) : undefined),
    });
    const degraded = await h.get("/resources/sample");
    expect(degraded.status).toBe(200);
    expect(degraded.headers.get("cache-control")).toBe("private, no-store");
    const first = (await degraded.json()) as Detail & { values_incomplete?: string };
    expect(first.values_incomplete).toMatch(/CKAN failed \d+ of the probes/);
    expect(first.columns.every((c) => c.values === undefined)).toBe(true);
    await h.settle();
    failing = false;
    const healed = await h.get("/resources/sample");
    expect(healed.headers.get("x-cache")).toBe("MISS");
    const second = (await healed.json()) as Detail & { values_incomplete?: string };
    expect(second.values_incomplete).toBeUndefined();
    expect(second.columns.some((c) => c.values !== undefined)).toBe(true);
  });

  it("answers an unknown alias with the published ones", async () => {
    const { get } = harness();
    const res = await get("/resources/sampel");
    expect(res.status).toBe(404);
    expect(((await res.json()) as ErrorBody).error.message).toBe(
      'No resource is published under the name "sampel". Published: sample, private, big, edge (GET /resources lists them).',
    );
  });

  it("is kept in the edge cache like an export", async () => {
    const { get, calls } = harness({ env: { CACHE_TTL_SECONDS: "60" } });
    const first = await get("/resources/sample");
    expect(first.headers.get("x-cache")).toBe("MISS");
    await first.text();
    const before = calls.length;
    const second = await get("/resources/sample");
    expect(second.headers.get("x-cache")).toBe("HIT");
    expect(await second.json()).toMatchObject({ name: "sample" });
    expect(calls.length).toBe(before);
  });

  it("never serves an answer cached under other settings: an alias moved to another table", async () => {
    const site = "http://ckan-discovery-settings.test/data/en";
    const before = harness({ env: { CACHE_TTL_SECONDS: "60", CKAN_BASE_URL: site } });
    expect(((await (await before.get("/resources/sample")).json()) as { rows: number }).rows).toBe(100_000);
    const moved = harness({
      env: {
        CACHE_TTL_SECONDS: "60",
        CKAN_BASE_URL: site,
        RESOURCES: JSON.stringify({ sample: EMULATOR_RESOURCES.edge }),
      },
    });
    const res = await moved.get("/resources/sample");
    expect(res.headers.get("x-cache")).toBe("MISS");
    expect(((await res.json()) as { rows: number }).rows).toBe(4321);
  });
});

describe("discovery with signed links", () => {
  const env = { LINK_SIGNING_KEY: KEY, ADMIN_TOKEN: ADMIN };

  it("needs the admin token, and hands out signed example links", async () => {
    const { get } = harness({ env });
    expect((await get("/resources")).status).toBe(401);
    expect((await get("/resources/sample")).status).toBe(401);
    const res = await get("/resources/sample", { headers: { authorization: `Bearer ${ADMIN}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("private, no-store");
    const body = (await res.json()) as Detail;
    const example = new URL(body.examples[0]!.url);
    expect(await verifyLink(KEY, example.pathname, example.searchParams, example.searchParams.get("sig") ?? "")).toBe(
      true,
    );
    expect((await get(example.pathname + example.search)).status).toBe(200);
  });

  it("an unknown alias in a signed export does not list the published ones", async () => {
    const { get } = harness({ env });
    const res = await get("/resources/nope", { headers: { authorization: `Bearer ${ADMIN}` } });
    expect(res.status).toBe(404);
  });
});

describe("names that are not valid URL encoding", () => {
  it("answers /resources/<alias> with a 404, not a 500", async () => {
    const { get } = harness();
    for (const path of ["/resources/a%", "/resources/%E0%A4%A"]) expect((await get(path)).status, path).toBe(404);
  });
});

describe("POST /links", () => {
  const env = { LINK_SIGNING_KEY: KEY, ADMIN_TOKEN: ADMIN };
  const post = (get: ReturnType<typeof harness>["get"], body: unknown, token = ADMIN) =>
    get("/links", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("answers a link that is not a URL with a 400", async () => {
    const { get } = harness({ env });
    const res = await post(get, { link: "https://" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { parameter: string } }).error.parameter).toBe("link");
  });

  it("signs an export link for an operator, with an expiry", async () => {
    const { get } = harness({ env });
    const res = await post(get, {
      link: "/export.csv?resource=sample&limit=5&filter.category=alpha",
      expires_in: 3600,
    });
    expect(res.status).toBe(200);
    const { link, expires } = (await res.json()) as { link: string; expires: string };
    expect(Date.parse(expires) - Date.now()).toBeGreaterThan(3500_000);
    const url = new URL(link);
    expect(url.searchParams.get("exp")).toMatch(/^\d+$/);
    const download = await get(url.pathname + url.search);
    expect(download.status).toBe(200);
    expect((await download.text()).trim().split("\r\n")).toHaveLength(6);
  });

  it("signs an aggregate link the worker then serves, and refuses one its parser refuses", async () => {
    const { get } = harness({ env });
    const res = await post(get, { link: "/aggregate.csv?resource=sample&group_by=category&measures=count" });
    expect(res.status).toBe(200);
    const url = new URL(((await res.json()) as { link: string }).link);
    const download = await get(url.pathname + url.search);
    expect(download.status).toBe(200);
    expect((await download.text()).split("\r\n")[0]).toBe("category,count");
    url.searchParams.delete("sig");
    expect((await get(url.pathname + url.search)).status).toBe(403);
    const bad = await post(get, { link: "/aggregate.csv?resource=sample&measures=median(amount)" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as ErrorBody).error.parameter).toBe("measures");
  });

  it("refuses without the token, a bad link before it is handed out, and when links are not signed", async () => {
    const { get } = harness({ env });
    expect((await post(get, { link: "/export.csv?resource=sample" }, "wrong")).status).toBe(401);
    const bad = await post(get, { link: "/export.csv?resource=sample&limit=ten" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as ErrorBody).error.parameter).toBe("limit");
    expect((await post(get, { link: "https://elsewhere.example/export.csv?resource=sample" })).status).toBe(400);
    expect((await post(get, { link: "/snapshots/x/run" })).status).toBe(400);
    expect((await post(get, { link: "/export.csv?resource=sample", expires_in: 5 })).status).toBe(400);
    const unsigned = harness({ env: { ADMIN_TOKEN: ADMIN } });
    expect((await post(unsigned.get, { link: "/export.csv?resource=sample" })).status).toBe(404);
  });
});

describe("errors that help", () => {
  it("a column CKAN does not know: the 400 names it and lists the table's columns", async () => {
    const { get } = harness();
    for (const [query, parameter] of [
      ["fields=id,nope", "fields"],
      ["filter.nope=1", "filter.nope"],
      ["sort=nope desc", "sort"],
    ] as const) {
      const res = await get(`/export.csv?resource=sample&${query}`);
      expect(res.status, query).toBe(400);
      const { error } = (await res.json()) as ErrorBody;
      expect(error.parameter, query).toBe(parameter === "filter.nope" ? "filters" : parameter);
      expect(error.message, query).toBe(
        'sample has no column "nope". Its columns are: id, amount, ratio, category, name, note, formula, created, active.',
      );
    }
  });

  it("a parameter's error links to its documentation on the page", async () => {
    const { get } = harness();
    const limit = (await (await get("/export.csv?resource=sample&limit=ten")).json()) as ErrorBody;
    expect(limit.error.docs).toBe("http://worker.test/#param-limit");
    const range = (await (
      await get("/export.csv?resource=sample&filter.amount[gte]=1&filter.amount=2")
    ).json()) as ErrorBody;
    expect(range.error.docs).toBe("http://worker.test/#param-filter-field");
  });
});

describe("GET /", () => {
  it("gives JSON clients the index and browsers the page", async () => {
    const assets = (testEnv as { ASSETS?: Fetcher }).ASSETS;
    const { get } = harness(assets === undefined ? {} : { env: { ASSETS: assets } });
    const json = await get("/", { headers: { accept: "application/json" } });
    expect(await json.json()).toMatchObject({
      service: "Datastore Export",
      resources: "http://worker.test/resources",
      openapi: "http://worker.test/openapi.json",
    });
    if (assets === undefined) return;
    const page = await get("/", { headers: { accept: "text/html,application/xhtml+xml" } });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await page.text()).toContain("<title>Datastore Export");
  });
});

describe("GET /openapi.json", () => {
  it("describes every export route with exactly the parameters its parser accepts", async () => {
    const { get } = harness();
    const doc = (await (await get("/openapi.json")).json()) as {
      openapi: string;
      paths: Record<string, { get?: { parameters?: { name: string }[] } }>;
    };
    expect(doc.openapi).toBe("3.1.0");
    const names = (path: string) => doc.paths[path]?.get?.parameters?.map((p) => p.name);
    expect(names("/export.csv")).toContain("delimiter");
    expect(names("/export.tsv")).not.toContain("delimiter");
    expect(names("/export.json")).not.toContain("bom");
    expect(names("/export.json")).toContain("filter.<field>");
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(["/resources", "/resources/{alias}", "/links", "/snapshots", "/"]),
    );
  });
});
