import { env as testEnv } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { harness, TOKEN } from "./harness.ts";

const bucket = (testEnv as { SNAPSHOTS: R2Bucket }).SNAPSHOTS;
const T1 = Date.UTC(2026, 10, 20, 3, 0, 0);
const T2 = Date.UTC(2026, 10, 21, 3, 0, 0);
const T3 = Date.UTC(2026, 10, 22, 3, 0, 0);

/** Counts the multipart calls the writer makes, passing everything through to the real bucket. */
function countingBucket() {
  const counts = { createMultipartUpload: 0, uploadPart: 0, abort: 0, complete: 0, put: 0 };
  const wrapUpload = (upload: R2MultipartUpload): R2MultipartUpload =>
    new Proxy(upload, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (prop === "uploadPart") counts.uploadPart++;
          if (prop === "abort") counts.abort++;
          if (prop === "complete") counts.complete++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  const wrapped = new Proxy(bucket, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      // A later step goes on with the upload by its id: counted the same.
      if (prop === "resumeMultipartUpload")
        return (...args: unknown[]) =>
          wrapUpload((value as (...a: unknown[]) => R2MultipartUpload).apply(target, args));
      return async (...args: unknown[]) => {
        if (prop === "put") counts.put++;
        const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (prop === "createMultipartUpload") {
          counts.createMultipartUpload++;
          return wrapUpload(result as R2MultipartUpload);
        }
        return result;
      };
    },
  });
  return { wrapped, counts };
}

async function keys(prefix: string): Promise<string[]> {
  const listed = await bucket.list({ prefix, include: ["customMetadata"] });
  return listed.objects.map((o) => o.key).sort();
}

const sha256 = async (data: ArrayBuffer): Promise<string> =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", data))].map((b) => b.toString(16).padStart(2, "0")).join("");

const jobs = (...list: Record<string, unknown>[]) => ({ SNAPSHOT_JOBS: JSON.stringify(list) });

beforeEach(async () => {
  const all = await bucket.list();
  if (all.objects.length > 0) await bucket.delete(all.objects.map((o) => o.key));
});

describe("scheduled snapshots", () => {
  it("writes a snapshot over 5 MiB as a multipart upload whose bytes equal the live export", async () => {
    const { wrapped, counts } = countingBucket();
    const h = harness({
      emulator: { version: "2.12" },
      env: {
        PAGE_SIZE: "5000",
        SNAPSHOT_PART_BYTES: String(5 * 1024 * 1024),
        SNAPSHOTS: wrapped,
        ...jobs({ name: "big-one", resource: "sample", limit: 60000, cron: "0 3 * * *" }),
      },
    });
    const [result] = await h.scheduled("0 3 * * *", T1);
    expect(result).toMatchObject({ job: "big-one", stamp: "20261120T030000Z", status: "ok" });
    // One upload, completed at the dated key: no assembled copy, no copy for latest.
    expect(counts.createMultipartUpload).toBe(1);
    expect(counts.uploadPart).toBeGreaterThanOrEqual(2);
    expect(counts.complete).toBe(1);
    expect(await keys("big-one/")).toEqual([
      "big-one/20261120T030000Z.csv",
      "big-one/datapackage.json",
      "big-one/manifest.json",
    ]);

    const dated = (await bucket.get("big-one/20261120T030000Z.csv"))!;
    const snapshot = await dated.arrayBuffer();
    expect(snapshot.byteLength).toBeGreaterThan(5 * 1024 * 1024);
    const live = await (await h.get("/export.csv?resource=sample&limit=60000")).arrayBuffer();
    expect(await sha256(snapshot)).toBe(await sha256(live));
    expect(JSON.parse(dated.customMetadata!.query!)).toEqual({ resource: "sample", limit: 60000 });
    expect(dated.httpMetadata?.contentType).toBe("text/csv; charset=utf-8");

    const latest = await h.get("/snapshots/big-one/latest.csv");
    expect(latest.headers.get("content-disposition")).toContain('filename="big-one.csv"');
    expect(latest.headers.get("cache-control")).toBe("public, max-age=300");
    expect(await sha256(await latest.arrayBuffer())).toBe(await sha256(snapshot));
    const manifest = (await (await bucket.get("big-one/manifest.json"))!.json()) as {
      snapshots: { rows: number; bytes: number }[];
      last_run: { status: string };
    };
    expect(manifest.snapshots).toHaveLength(1);
    // The hash was carried from step to step as the bytes went by, never read back: the file's own.
    expect(manifest.snapshots[0]).toMatchObject({
      rows: 60000,
      bytes: snapshot.byteLength,
      total: 100000,
      sha256: await sha256(snapshot),
    });
    expect(manifest.last_run.status).toBe("ok");
    for (const object of (await bucket.list({ include: ["customMetadata", "httpMetadata"] })).objects) {
      expect(JSON.stringify(object.customMetadata ?? {})).not.toContain(TOKEN);
      expect(JSON.stringify(object.httpMetadata ?? {})).not.toContain(TOKEN);
    }
  });

  it("publishes nothing when a later page fails, leaving latest and the manifest's list as they were", async () => {
    let failing = false;
    const { wrapped, counts } = countingBucket();
    const h = harness({
      emulator: { version: "2.12" },
      env: {
        PAGE_SIZE: "5000",
        SNAPSHOT_PART_BYTES: String(5 * 1024 * 1024),
        UPSTREAM_RETRIES: "0",
        SNAPSHOTS: wrapped,
        ...jobs({ name: "nightly", resource: "sample", limit: 60000, formats: ["csv", "ndjson"] }),
      },
      // The first page past _id 50000 fails (keyset paging), well past the first 5 MiB part.
      fault: (_, body) => {
        const after = (body.filters as { _id?: { gt?: number } } | undefined)?._id?.gt ?? 0;
        return failing && after >= 50000 ? new Response("down", { status: 500 }) : undefined;
      },
    });
    await h.scheduled("* * * * *", T1);
    const latestOf = async (file: string) => sha256(await (await h.get(`/snapshots/nightly/${file}`)).arrayBuffer());
    const before = {
      latestCsv: await latestOf("latest.csv"),
      latestNd: await latestOf("latest.ndjson"),
      manifest: (await (await bucket.get("nightly/manifest.json"))!.json()) as { snapshots: unknown[] },
    };
    failing = true;
    h.calls.length = 0;
    const [result] = await h.scheduled("* * * * *", T2);
    expect(result!.status).toBe("failed");
    expect(result!.error).toMatch(/csv: CKAN answered HTTP 500/);
    expect(counts.abort).toBe(2);
    expect(await keys("nightly/")).toEqual([
      "nightly/20261120T030000Z.csv",
      "nightly/20261120T030000Z.ndjson",
      "nightly/datapackage.json",
      "nightly/manifest.json",
    ]);
    expect(await latestOf("latest.csv")).toBe(before.latestCsv);
    expect(await latestOf("latest.ndjson")).toBe(before.latestNd);
    const after = (await (await bucket.get("nightly/manifest.json"))!.json()) as {
      snapshots: unknown[];
      last_run: { status: string; error: string };
    };
    expect(after.snapshots).toEqual(before.manifest.snapshots);
    expect(after.last_run).toMatchObject({ status: "failed", error: expect.stringContaining("HTTP 500") });
  });

  it("keeps only `keep` dated snapshots, never deleting latest or the manifest", async () => {
    const h = harness({ env: jobs({ name: "small", resource: "sample", limit: 10, keep: 2 }) });
    for (const t of [T1, T2, T3]) await h.scheduled("0 3 * * *", t);
    expect(await keys("small/")).toEqual([
      "small/20261121T030000Z.csv",
      "small/20261122T030000Z.csv",
      "small/datapackage.json",
      "small/manifest.json",
    ]);
    const manifest = (await (await bucket.get("small/manifest.json"))!.json()) as { snapshots: { stamp: string }[] };
    expect(manifest.snapshots.map((s) => s.stamp)).toEqual(["20261122T030000Z", "20261121T030000Z"]);
  });

  it("does not write a second snapshot for the same scheduled time", async () => {
    const h = harness({ env: jobs({ name: "once", resource: "sample", limit: 10 }) });
    await h.scheduled("0 3 * * *", T1);
    const upstreamCalls = h.calls.length;
    const etag = (await bucket.head("once/20261120T030000Z.csv"))!.etag;
    const [again] = await h.scheduled("0 3 * * *", T1);
    expect(again).toMatchObject({ status: "ok", written: [], skipped: ["csv"] });
    expect(h.calls.length).toBe(upstreamCalls);
    expect((await bucket.head("once/20261120T030000Z.csv"))!.etag).toBe(etag);
    const manifest = (await (await bucket.get("once/manifest.json"))!.json()) as { snapshots: unknown[] };
    expect(manifest.snapshots).toHaveLength(1);
  });

  it("lets one run of a job write at a time: a run that finds the job taken writes nothing and says which run has it", async () => {
    const h = harness({ env: jobs({ name: "overlap", resource: "sample", limit: 10 }) });
    const results = (await Promise.all([h.scheduled("0 3 * * *", T1), h.scheduled("0 3 * * *", T2)])).flat();
    expect(results.map((r) => r.status).sort()).toEqual(["ok", "skipped"]);
    const skipped = results.find((r) => r.status === "skipped")!;
    expect(skipped.error).toMatch(
      /^run overlap-2026112[01]T030000Z-[0-9a-f]{8} of this job is still going; this run wrote nothing$/,
    );
    const manifest = (await (await bucket.get("overlap/manifest.json"))!.json()) as {
      snapshots: { stamp: string }[];
      last_run: { status: string };
    };
    expect(manifest.snapshots.map((s) => s.stamp)).toEqual([results.find((r) => r.status === "ok")!.stamp]);
    expect(manifest.last_run.status).toBe("ok");
    expect(await keys("overlap/")).not.toContainEqual(expect.stringContaining(".staging"));
    expect(await keys("overlap/")).not.toContain("overlap/.run.json");
  });

  it("runs the good jobs when one is bad, runs only the jobs of this trigger, and reports the bad one", async () => {
    const h = harness({
      env: jobs(
        { name: "good", resource: "sample", limit: 5, cron: "0 3 * * *" },
        { name: "unknown-alias", resource: "nope" },
        { name: "good", resource: "sample" },
        { name: "Bad Name", resource: "sample" },
        { name: "bad-format", resource: "sample", formats: ["pdf"] },
        { name: "bad-compress", resource: "sample", compress: "brotli" },
        { name: "other-trigger", resource: "sample", limit: 5, cron: "0 * * * *" },
      ),
    });
    const results = await h.scheduled("0 3 * * *", T1);
    expect(results.map((r) => r.job)).toEqual(["good"]);
    expect(await keys("other-trigger/")).toEqual([]);
    const listing = (await (await h.get("/snapshots")).json()) as {
      jobs: { name: string }[];
      problems: { job: string; message: string }[];
    };
    expect(listing.jobs.map((j) => j.name)).toEqual(["good", "other-trigger"]);
    expect(listing.problems.map((p) => p.job)).toEqual([
      "unknown-alias",
      "good",
      "Bad Name",
      "bad-format",
      "bad-compress",
    ]);
    expect(listing.problems[0]!.message).toContain('"nope"');
  });
});

describe("serving snapshots", () => {
  async function published() {
    const h = harness({
      env: {
        ADMIN_TOKEN: "admin-SECRET-91",
        ...jobs({ name: "daily", resource: "sample", limit: 100, formats: ["csv", "json"] }),
      },
    });
    await h.scheduled("0 3 * * *", T1);
    return h;
  }

  it("lists jobs with their latest snapshot and links", async () => {
    const h = await published();
    const listing = (await (await h.get("/snapshots")).json()) as { jobs: Record<string, unknown>[] };
    expect(listing.jobs[0]).toMatchObject({
      name: "daily",
      latest: {
        csv: { time: "2026-11-20T03:00:00.000Z", rows: 100, url: "http://worker.test/snapshots/daily/latest.csv" },
        json: { rows: 100, dated_url: "http://worker.test/snapshots/daily/20261120T030000Z.json" },
      },
      last_run: { status: "ok" },
    });
  });

  it("streams latest, dated and manifest files with ETag, 304 and 206", async () => {
    const h = await published();
    const res = await h.get("/snapshots/daily/latest.csv");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^"/);
    expect(res.headers.get("last-modified")).toBeTruthy();
    const body = await res.text();
    expect(body.startsWith("id,amount,")).toBe(true);
    expect(await (await h.get("/snapshots/daily/20261120T030000Z.csv")).text()).toBe(body);

    const cached = await h.get("/snapshots/daily/latest.csv", { headers: { "if-none-match": etag } });
    expect(cached.status).toBe(304);
    const part = await h.get("/snapshots/daily/latest.csv", { headers: { range: "bytes=0-9" } });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe(`bytes 0-9/${new TextEncoder().encode(body).byteLength}`);
    expect(await part.text()).toBe(body.slice(0, 10));
    const head = await h.get("/snapshots/daily/latest.json", { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    const manifest = (await (await h.get("/snapshots/daily/manifest.json")).json()) as { snapshots: unknown[] };
    expect(manifest.snapshots).toHaveLength(2);
  });

  it("answers Range as RFC 9110 says: 416 past the end, the whole file for a malformed or multiple range, If-Range honoured", async () => {
    const h = await published();
    const whole = await h.get("/snapshots/daily/latest.csv");
    const body = await whole.text();
    const size = new TextEncoder().encode(body).byteLength;
    const etag = whole.headers.get("etag")!;
    const get = (headers: Record<string, string>) => h.get("/snapshots/daily/latest.csv", { headers });

    const past = await get({ range: "bytes=99999999-" });
    expect(past.status).toBe(416);
    expect(past.headers.get("content-range")).toBe(`bytes */${size}`);
    expect(await past.text()).toBe("");
    for (const range of ["bytes=100-50", "bytes=0-9,20-29", "lines=0-9", "bytes=abc"]) {
      const res = await get({ range });
      expect(res.status, range).toBe(200);
      expect(res.headers.get("content-range"), range).toBeNull();
      expect(await res.text(), range).toBe(body);
    }
    const tail = await get({ range: "bytes=-5" });
    expect(tail.status).toBe(206);
    expect(tail.headers.get("content-range")).toBe(`bytes ${size - 5}-${size - 1}/${size}`);
    expect(await tail.text()).toBe(body.slice(-5));
    const open = await get({ range: `bytes=${size - 3}-` });
    expect(await open.text()).toBe(body.slice(-3));

    const stillSame = await get({ range: "bytes=0-9", "if-range": etag });
    expect(stillSame.status).toBe(206);
    const changed = await get({ range: "bytes=0-9", "if-range": '"not-this-one"' });
    expect(changed.status).toBe(200);
    expect(await changed.text()).toBe(body);
  });

  it("serves datapackage.json beside the manifest: each format's latest file, its size and hash, CKAN's data dictionary as its Table Schema", async () => {
    const h = await published();
    const res = await h.get("/snapshots/daily/datapackage.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(
      (await h.get("/snapshots/daily/datapackage.json", { headers: { "if-none-match": res.headers.get("etag")! } }))
        .status,
    ).toBe(304);
    const descriptor = (await res.json()) as {
      profile: string;
      resources: {
        name: string;
        path: string;
        bytes: number;
        hash: string;
        dialect?: { delimiter: string };
        schema: { fields: Record<string, string>[]; missingValues?: string[] };
      }[];
    };
    expect(descriptor.profile).toBe("tabular-data-package");
    const [csv, json] = descriptor.resources;
    const file = await (await h.get(`/snapshots/daily/${csv!.path}`)).arrayBuffer();
    expect(csv).toMatchObject({
      name: "daily-csv",
      path: "20261120T030000Z.csv",
      bytes: file.byteLength,
      hash: `sha256:${await sha256(file)}`,
      dialect: { delimiter: "," },
    });
    expect(json).toMatchObject({ name: "daily-json", path: "20261120T030000Z.json" });
    expect(json!.dialect).toBeUndefined();
    // The header row names the fields; the data dictionary gives their titles and descriptions.
    const header = new TextDecoder().decode(file).split("\r\n")[0]!.split(",");
    expect(csv!.schema.fields.map((f) => f.name)).toEqual(header);
    expect(csv!.schema.fields.find((f) => f.name === "amount")).toEqual({
      name: "amount",
      title: "Amount (CAD)",
      description: expect.stringContaining("taxes included"),
      type: "number",
    });
    expect(csv!.schema.fields.find((f) => f.name === "formula")).toEqual({ name: "formula", type: "string" });
    expect(csv!.schema.missingValues).toEqual([""]);
    expect(await keys("daily/")).toEqual([
      "daily/20261120T030000Z.csv",
      "daily/20261120T030000Z.json",
      "daily/datapackage.json",
      "daily/manifest.json",
    ]);
  });

  it("answers a range on an empty snapshot with 416, and serves the empty file whole", async () => {
    const h = harness({
      env: { ...jobs({ name: "empty", resource: "sample", filters: { category: "no-such" }, formats: ["ndjson"] }) },
    });
    await h.scheduled("0 3 * * *", T1);
    const whole = await h.get("/snapshots/empty/latest.ndjson");
    expect(whole.status).toBe(200);
    expect((await whole.arrayBuffer()).byteLength).toBe(0);
    const ranged = await h.get("/snapshots/empty/latest.ndjson", { headers: { range: "bytes=0-" } });
    expect(ranged.status).toBe(416);
    expect(ranged.headers.get("content-range")).toBe("bytes */0");
  });

  it("answers unknown jobs, stamps and files with a 404 JSON error", async () => {
    const h = await published();
    for (const path of [
      "/snapshots/nope/latest.csv",
      "/snapshots/daily/20990101T000000Z.csv",
      "/snapshots/daily/latest.tsv",
      "/snapshots/daily/.staging",
      "/snapshots/daily/secret.txt",
    ]) {
      const res = await h.get(path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    }
  });

  it("says, without the R2 binding, that a binding is missing and which wrangler.toml table adds it (not [vars], not Variables)", async () => {
    const h = harness({ env: { SNAPSHOTS: undefined, ...jobs({ name: "daily", resource: "sample", limit: 100 }) } });
    for (const path of ["/snapshots", "/snapshots/daily/latest.csv"]) {
      const res = await h.get(path);
      expect(res.status, path).toBe(503);
      const { error } = (await res.json()) as { error: { setting: string; message: string } };
      expect(error.setting).toBe("SNAPSHOTS");
      expect(error.message).toContain("the R2 bucket binding SNAPSHOTS is missing");
      expect(error.message).toContain('[[r2_buckets]] entry with binding = "SNAPSHOTS" in wrangler.toml');
      expect(error.message).not.toMatch(/\[vars\]|Variables/);
    }
  });

  it("runs a job now only for an operator with ADMIN_TOKEN", async () => {
    const h = await published();
    expect((await h.get("/snapshots/daily/run", { method: "POST" })).status).toBe(401);
    expect(
      (await h.get("/snapshots/daily/run", { method: "POST", headers: { authorization: "Bearer wrong" } })).status,
    ).toBe(401);
    const ok = await h.get("/snapshots/daily/run", {
      method: "POST",
      headers: { authorization: "Bearer admin-SECRET-91" },
    });
    expect(ok.status).toBe(200);
    const text = await ok.text();
    expect(text).not.toContain("admin-SECRET-91");
    expect(JSON.parse(text)).toMatchObject({ job: "daily", status: "ok" });
    const off = harness({ env: jobs({ name: "daily", resource: "sample" }) });
    expect(
      (await off.get("/snapshots/daily/run", { method: "POST", headers: { authorization: "Bearer x" } })).status,
    ).toBe(404);
  });
});
