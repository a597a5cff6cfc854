// Snapshots as a client downloads them over real HTTP (`wrangler dev`, its local R2): a job with
// `"compress": "gzip"` stores CSV, TSV, JSON and NDJSON gzipped and serves them gzipped to a client
// that accepts it (node:zlib decodes them to the live export's bytes) and decoded to one that does
// not; its Parquet file is read by DuckDB and by Range, as DuckDB reads a remote file's footer; its
// datapackage.json is a valid Tabular Data Package (Ajv, the published v1 profile) that DuckDB can
// read the CSV by.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { DuckDBInstance } from "@duckdb/node-api";
import Ajv from "ajv-draft-04";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMULATOR_RESOURCES } from "../../emulator/index.ts";
import { EDGE_ROWS } from "../../emulator/edge-rows.ts";
import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";
import { getRaw, startWorker, type WorkerProcess } from "./harness.mts";

const ADMIN = "admin-token-for-this-spec";
const TEXT = ["csv", "tsv", "json", "ndjson"] as const;
const JOB = { name: "edge-gz", resource: "edge", formats: [...TEXT, "parquet"], compress: "gzip" };

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

interface Listed {
  bytes: number;
  sha256: string;
  encoding?: string;
  decoded_bytes?: number;
}

describe("gzip and Parquet snapshots, downloaded with node:http", () => {
  let emulator: EmulatorServer;
  let worker: WorkerProcess;
  let latest: Record<string, Listed>;

  beforeAll(async () => {
    emulator = await startEmulatorServer({ port: 0 });
    worker = await startWorker({
      vars: {
        CKAN_BASE_URL: `${emulator.url}/data/en`,
        RESOURCES: JSON.stringify(EMULATOR_RESOURCES),
        PAGE_SIZE: "1000",
        CACHE_TTL_SECONDS: "0",
        ADMIN_TOKEN: ADMIN,
        SNAPSHOT_JOBS: JSON.stringify([JOB]),
      },
    });
    // The demo binds the snapshot Workflow: the run starts (202) and goes on in its instance.
    const run = await fetch(`${worker.url}/snapshots/${JOB.name}/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(run.status, await run.clone().text()).toBe(202);
    for (;;) {
      const listing = (await (await fetch(`${worker.url}/snapshots`)).json()) as {
        jobs: { latest: Record<string, Listed>; last_run: { status: string; error?: string } | null }[];
      };
      const [job] = listing.jobs;
      if (job?.last_run != null) {
        expect(job.last_run.status, job.last_run.error).toBe("ok");
        latest = job.latest;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }, 180_000);

  afterAll(async () => {
    await Promise.allSettled([worker?.stop(), emulator?.close()]);
  }, 30_000);

  const snapshot = (file: string, headers: Record<string, string> = {}) =>
    getRaw(`${worker.url}/snapshots/${JOB.name}/${file}`, { headers });
  const live = async (format: string): Promise<Buffer> =>
    (await getRaw(`${worker.url}/export.${format}?resource=edge`)).body;

  it.each(TEXT)(
    "%s: gzip to a client that accepts it, the live export once gunzipped; its size and sha256 in the listing",
    async (format) => {
      const res = await snapshot(`latest.${format}`, { "accept-encoding": "gzip, deflate, br" });
      expect(res.status).toBe(200);
      expect(res.headers["content-encoding"]).toBe("gzip");
      expect(res.headers.vary).toBe("accept-encoding");
      expect(Number(res.headers["content-length"])).toBe(res.body.length);
      const want = await live(format);
      expect(gunzipSync(res.body).equals(want)).toBe(true);
      expect(res.body.length).toBeLessThan(want.length / 2);
      expect(latest[format]).toEqual(
        expect.objectContaining({
          bytes: res.body.length,
          sha256: sha256(res.body),
          encoding: "gzip",
          decoded_bytes: want.length,
        }),
      );
    },
  );

  it.each(TEXT)(
    "%s: decoded on the fly for a client that does not accept gzip, the live export's bytes",
    async (format) => {
      // (A client that takes br gets JSON brotli-compressed by the edge, as Cloudflare compresses JSON.)
      const clients: Record<string, string>[] = [
        {},
        { "accept-encoding": "identity" },
        { "accept-encoding": "deflate, gzip;q=0" },
      ];
      for (const headers of clients) {
        const res = await snapshot(`latest.${format}`, headers);
        expect(res.status).toBe(200);
        expect(res.headers["content-encoding"]).toBeUndefined();
        expect(res.body.equals(await live(format))).toBe(true);
      }
    },
  );

  it("serves a range of a gzip snapshot's stored bytes to a gzip client, and the whole file decoded to another", async () => {
    const whole = (await snapshot("latest.csv", { "accept-encoding": "gzip" })).body;
    const part = await snapshot("latest.csv", { "accept-encoding": "gzip", range: "bytes=100-199" });
    expect(part.status).toBe(206);
    expect(part.headers["content-range"]).toBe(`bytes 100-199/${whole.length}`);
    expect(part.body.equals(whole.subarray(100, 200))).toBe(true);

    const plain = await snapshot("latest.csv", { range: "bytes=100-199" });
    expect(plain.status).toBe(200);
    expect(plain.body.equals(await live("csv"))).toBe(true);
  });

  it("answers 304 to either representation's own ETag", async () => {
    const clients: Record<string, string>[] = [{ "accept-encoding": "gzip" }, {}];
    for (const headers of clients) {
      const first = await snapshot("latest.ndjson", headers);
      const again = await snapshot("latest.ndjson", { ...headers, "if-none-match": String(first.headers.etag) });
      expect(again.status).toBe(304);
    }
    const gzipTag = (await snapshot("latest.ndjson", { "accept-encoding": "gzip" })).headers.etag;
    expect((await snapshot("latest.ndjson")).headers.etag).not.toBe(gzipTag);
  });

  it("describes the job in datapackage.json: valid against the published profile, each file as a client downloads it, CSV read by DuckDB with its dialect", async () => {
    const res = await snapshot("datapackage.json");
    expect(res.status).toBe(200);
    const descriptor = JSON.parse(res.body.toString()) as {
      resources: {
        name: string;
        path: string;
        bytes: number;
        hash?: string;
        dialect?: { delimiter: string; header: boolean };
        schema: { fields: { name: string; type: string }[] };
      }[];
    };
    const profile = JSON.parse(
      readFileSync(new URL("../fixtures/frictionless-v1/tabular-data-package.json", import.meta.url), "utf8"),
    ) as object;
    const valid = new Ajv({ allErrors: true, strict: false }).compile(profile);
    expect(valid(descriptor), JSON.stringify(valid.errors)).toBe(true);
    expect(descriptor.resources.map((r) => r.name)).toEqual(JOB.formats.map((f) => `${JOB.name}-${f}`));
    for (const resource of descriptor.resources) {
      // Relative to datapackage.json, as a reader resolves it; what its HTTP client hands it (gzip undone).
      const file = (await snapshot(resource.path)).body;
      expect(resource.bytes, resource.name).toBe(file.length);
      if (resource.hash !== undefined) expect(resource.hash).toBe(`sha256:${sha256(file)}`);
    }
    const csv = descriptor.resources[0]!;
    const dir = await mkdtemp(join(tmpdir(), "datastore-export-datapackage-"));
    try {
      await writeFile(join(dir, "data.csv"), (await snapshot(csv.path)).body);
      const db = await (await DuckDBInstance.create(":memory:")).connect();
      const read = await db.runAndReadAll(
        `SELECT * FROM read_csv('${join(dir, "data.csv")}', delim='${csv.dialect!.delimiter}', header=${csv.dialect!.header}, quote='"', all_varchar=true)`,
      );
      expect(read.columnNames()).toEqual(csv.schema.fields.map((f) => f.name));
      expect(read.getRows().length).toBe(EDGE_ROWS);
      db.closeSync();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("stores Parquet as it is, read by DuckDB and by Range from its footer back", async () => {
    const res = await snapshot("latest.parquet", { "accept-encoding": "gzip" });
    expect(res.status).toBe(200);
    expect(res.headers["content-encoding"]).toBeUndefined();
    expect(res.headers["content-type"]).toBe("application/vnd.apache.parquet");
    expect(res.body.equals(await live("parquet"))).toBe(true);
    expect(latest.parquet).toEqual({ ...latest.parquet, bytes: res.body.length, sha256: sha256(res.body) });
    expect(latest.parquet!.encoding).toBeUndefined();

    // As a remote reader does: the last 8 bytes (footer length, magic), then the footer, by Range.
    const tail = await snapshot("latest.parquet", { range: "bytes=-8" });
    expect(tail.status).toBe(206);
    expect(tail.body.subarray(4).toString()).toBe("PAR1");
    const footerLength = tail.body.readUInt32LE(0);
    const footer = await snapshot("latest.parquet", {
      range: `bytes=${res.body.length - 8 - footerLength}-${res.body.length - 9}`,
    });
    expect(footer.status).toBe(206);
    expect(footer.body.equals(res.body.subarray(res.body.length - 8 - footerLength, res.body.length - 8))).toBe(true);

    const dir = await mkdtemp(join(tmpdir(), "datastore-export-snapshot-"));
    try {
      await writeFile(join(dir, "latest.parquet"), res.body);
      const db = await (await DuckDBInstance.create(":memory:")).connect();
      const counted = await db.runAndReadAll(
        `SELECT count(*), count(DISTINCT id), max(created) IS NOT NULL FROM read_parquet('${join(dir, "latest.parquet")}')`,
      );
      expect(counted.getRows()[0]!.map(String)).toEqual([String(EDGE_ROWS), String(EDGE_ROWS), "true"]);
      db.closeSync();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
