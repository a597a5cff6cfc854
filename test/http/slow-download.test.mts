// A client that reads slowly, over real HTTP (`wrangler dev`, whose fetch aborts a body with its
// request's signal; the in-process harness's fetch ignores it). CKAN answers every page in time, but
// a page's answer then waits, unread, for its turn, as long as the pages before it take to reach the
// client: UPSTREAM_TIMEOUT_SECONDS must not count that wait, or every such page is asked again (or
// the export fails once a page has broken off three times).
import { request } from "node:http";
import Papa from "papaparse";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";
import { startWorker, type WorkerProcess } from "./harness.mts";

// Enough to pass what the connections buffer on the way (wrangler dev's proxy, the sockets), so the
// client's pause reaches the worker: at 100,000 rows every page was read before the pause ended.
const ROWS = 400_000;

describe("a download slower than UPSTREAM_TIMEOUT_SECONDS", () => {
  let emulator: EmulatorServer;
  let worker: WorkerProcess;

  beforeAll(async () => {
    emulator = await startEmulatorServer({ port: 0 });
    worker = await startWorker({
      vars: {
        CKAN_BASE_URL: `${emulator.url}/data/en`,
        CACHE_TTL_SECONDS: "0",
        UPSTREAM_TIMEOUT_SECONDS: "3",
        PAGE_SIZE: "32000",
      },
    });
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled([worker?.stop(), emulator?.close()]);
  }, 30_000);

  /** The body of `path`, read a first chunk, then after `pauseMs`, the rest. */
  function readSlowly(path: string, pauseMs: number): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request(`${worker.url}${path}`, (res) => {
        const chunks: Buffer[] = [];
        res.once("data", (chunk: Buffer) => {
          chunks.push(chunk);
          res.pause();
          setTimeout(() => {
            res.on("data", (more: Buffer) => chunks.push(more));
            res.resume();
          }, pauseMs);
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end();
    });
  }

  it("pages CKAN answered in time are not asked again while they wait their turn", async () => {
    const asked: string[] = [];
    emulator.setFault((_n, body) => void asked.push(JSON.stringify(body)));
    const { status, body } = await readSlowly(`/export.csv?resource=big&limit=${ROWS}`, 10_000);
    emulator.setFault(undefined);
    expect(status).toBe(200);
    expect(Papa.parse(body.trimEnd(), { newline: "\r\n" }).data).toHaveLength(ROWS + 1);
    expect(body).not.toContain("EXPORT INCOMPLETE");
    expect(asked.length).toBeGreaterThan(5);
    // Every request once: none asked again after its answer broke off.
    expect(new Set(asked).size).toBe(asked.length);
  }, 120_000);
});
