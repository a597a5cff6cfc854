import { env as testEnv } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { harness } from "./harness.ts";

// A snapshot job with "aggregate": the aggregate's files in R2, for dashboards that read R2: the
// same bytes as the live /aggregate link.

const bucket = (testEnv as { SNAPSHOTS: R2Bucket }).SNAPSHOTS;
const T1 = Date.UTC(2026, 10, 20, 3, 0, 0);
const jobs = (...list: Record<string, unknown>[]) => ({ SNAPSHOT_JOBS: JSON.stringify(list) });

beforeEach(async () => {
  const all = await bucket.list();
  if (all.objects.length > 0) await bucket.delete(all.objects.map((o) => o.key));
});

describe("aggregate snapshot jobs", () => {
  it("write the aggregate's files, byte for byte the live link's", async () => {
    const job = {
      name: "per-month",
      resource: "sample",
      filters: { active: true },
      sort: "sum(amount) desc",
      limit: 20,
      aggregate: { group_by: "category,month(created)", measures: "count,sum(amount),avg(ratio)" },
      formats: ["csv", "json", "parquet"],
    };
    const h = harness({ emulator: { version: "2.12" }, env: { PAGE_SIZE: "5000", ...jobs(job) } });
    const [result] = await h.scheduled("0 3 * * *", T1);
    expect(result).toMatchObject({ job: "per-month", status: "ok" });
    const link =
      "resource=sample&filter.active=true&sort=sum(amount)%20desc&limit=20&group_by=category,month(created)&measures=count,sum(amount),avg(ratio)";
    for (const format of ["csv", "json", "parquet"]) {
      const stored = (await bucket.get(`per-month/20261120T030000Z.${format}`))!;
      expect(stored, format).not.toBeNull();
      const live = await (await h.get(`/aggregate.${format}?${link}`)).arrayBuffer();
      expect(new Uint8Array(await stored.arrayBuffer()), format).toEqual(new Uint8Array(live));
      expect(JSON.parse(stored.customMetadata!.query!)).toMatchObject({ aggregate: job.aggregate });
    }
    const csv = await (await h.get("/snapshots/per-month/latest.csv")).text();
    expect(csv.split("\r\n")[0]).toBe("category,month(created),count,sum(amount),avg(ratio)");
    expect(csv.trimEnd().split("\r\n")).toHaveLength(21);
  });

  it("report a bad aggregate job, as a link would be told, and skip it", async () => {
    const h = harness({
      env: jobs(
        { name: "bad-column", resource: "sample", aggregate: { group_by: "month(category)" } },
        { name: "bad-shape", resource: "sample", aggregate: "category" },
        { name: "with-fields", resource: "sample", fields: ["id"], aggregate: { measures: "count" } },
      ),
    });
    const health = (await (await h.get("/health")).json()) as { warnings: string[] };
    expect(health.warnings.join("\n")).toContain(
      'Snapshot job bad-shape "aggregate" must be {"group_by": "...", "measures": "..."}',
    );
    expect(health.warnings.join("\n")).toMatch(/Snapshot job with-fields:? Parameter fields is for exports/);
    // A column's type is the table's: checked when the job runs, and the run says so.
    const results = await h.scheduled("0 3 * * *", T1);
    expect(results.find((r) => r.job === "bad-column")).toMatchObject({ status: "failed" });
    expect(JSON.stringify(results.find((r) => r.job === "bad-column"))).toContain("needs a date or timestamp column");
  });
});
