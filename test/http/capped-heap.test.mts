// Every format under a small V8 heap, in `wrangler dev` (which otherwise sets no limit, so no other
// spec would ever see an isolate die): the worker must finish each export whole, not reach the
// heap limit. A production isolate has 128 MB shared by every request it runs; with the heap
// capped at 24 MB, exports that held pages of rows in heap (TSV, XLSX) died within the first pages.
import Papa from "papaparse";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";
import { unzip } from "../xlsx-reader.ts";
import { getRaw, startWorker, type WorkerProcess } from "./harness.mts";

const HEAP_MB = 24;
const ROWS = 150_000;

describe(`every format under a ${HEAP_MB} MB V8 heap`, () => {
  let emulator: EmulatorServer;
  let worker: WorkerProcess;

  beforeAll(async () => {
    emulator = await startEmulatorServer({ port: 0 });
    worker = await startWorker({
      vars: { CKAN_BASE_URL: `${emulator.url}/data/en`, CACHE_TTL_SECONDS: "0", MAX_ROWS: "2000000" },
      v8Flags: `--max-old-space-size=${HEAP_MB}`,
    });
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled([worker?.stop(), emulator?.close()]);
  }, 30_000);

  /** Rows in a body, the header or the brackets left out, read as their readers read them. */
  async function rowsOf(format: string, body: Buffer): Promise<number> {
    if (format === "xlsx") {
      const sheet = new TextDecoder().decode((await unzip(body)).get("xl/worksheets/sheet1.xml"));
      return (sheet.match(/<row[ >]/g) ?? []).length - 1;
    }
    if (format === "json") return (JSON.parse(body.toString("utf8")) as unknown[]).length;
    if (format === "ndjson")
      return body
        .toString("utf8")
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line) as unknown).length;
    return (
      Papa.parse(body.toString("utf8").trimEnd(), { newline: "\r\n", delimiter: format === "tsv" ? "\t" : "," }).data
        .length - 1
    );
  }

  for (const format of ["csv", "tsv", "json", "ndjson", "xlsx"]) {
    it(`${format.toUpperCase()}: ${ROWS.toLocaleString("en")} rows arrive whole, and the isolate lives`, async () => {
      const from = worker.output().length;
      const res = await getRaw(`${worker.url}/export.${format}?resource=big&limit=${ROWS}`, { timeoutMs: 120_000 });
      const said = worker.output().slice(from);
      const died = /Reached heap limit|heap out of memory|crashed unexpectedly/i.test(said);
      expect({ status: res.status, complete: res.complete, died }, said.slice(-1500)).toEqual({
        status: 200,
        complete: true,
        died: false,
      });
      expect(await rowsOf(format, res.body)).toBe(ROWS);
    }, 180_000);
  }

  // Before CKAN 2.12 (the emulator's default), the table's second half comes from its end: each such
  // page held whole, then written reversed. The same bytes as paging by offset (`sort=_id`).
  for (const format of ["csv", "json", "xlsx"]) {
    it(`${format.toUpperCase()}: a whole table, its second half asked from its end, as paged by offset`, async () => {
      const sorts: unknown[] = [];
      emulator.setFault((_n, body) => void sorts.push(body.sort));
      const fromEnd = await getRaw(`${worker.url}/export.${format}?resource=sample`, { timeoutMs: 120_000 });
      emulator.setFault(undefined);
      const byOffset = await getRaw(`${worker.url}/export.${format}?resource=sample&sort=_id`, { timeoutMs: 120_000 });
      expect(sorts).toContain("_id desc");
      expect({ status: fromEnd.status, complete: fromEnd.complete }).toEqual({ status: 200, complete: true });
      expect(fromEnd.body.equals(byOffset.body)).toBe(true);
      expect(await rowsOf(format, fromEnd.body)).toBe(100_000);
    }, 180_000);
  }
});
