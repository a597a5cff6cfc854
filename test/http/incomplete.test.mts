// The incomplete-download contract (README, "Errors") over real HTTP: the worker in `wrangler dev`,
// the CKAN emulator failing one page, and Node's own HTTP client reading the bytes on the wire. An
// in-process spec reads the stream inside workerd itself and cannot see what a client receives.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";
import { unzip } from "../xlsx-reader.ts";
import { getRaw, startWorker, type WireResponse, type WorkerProcess } from "./harness.mts";

const PAGE_SIZE = 200;
const LIMIT = 1000;
/** The worker asks for pages at offsets 0, 200, 400, 600 and 800 (the last). */
const WHERE = [
  { page: "page 2", offset: PAGE_SIZE },
  { page: "the last page", offset: LIMIT - PAGE_SIZE },
] as const;

type Format = "csv" | "tsv" | "ndjson" | "json" | "xlsx";

/** Ids 1..n: the rows of every page before the failed one, none missing. */
const firstIds = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1);

/** The row ids of text lines (CSV/TSV: header first), per format. */
function idsOf(format: Format, lines: string[]): number[] {
  if (format === "ndjson") return lines.map((line) => (JSON.parse(line) as { id: number }).id);
  expect(lines[0]).toBe("id");
  return lines.slice(1).map(Number);
}

/** What Node reports for a transfer cut short: no last chunk, so not complete, 'aborted', then 'error'. */
function expectBrokenTransfer(res: WireResponse): void {
  expect(res.headers["transfer-encoding"]).toBe("chunked");
  expect({ complete: res.complete, aborted: res.aborted, error: res.error?.code }).toEqual({
    complete: false,
    aborted: true,
    error: "ECONNRESET",
  });
}

describe("a streamed export cut off by an upstream failure, read with node:http", () => {
  let emulator: EmulatorServer;
  /** Streaming straight to the client, and (the default) through the edge-cache fill beside it. */
  const workers: { plain?: WorkerProcess; cached?: WorkerProcess } = {};

  beforeAll(async () => {
    emulator = await startEmulatorServer({ port: 0, version: "2.10" });
    const vars = {
      CKAN_BASE_URL: `${emulator.url}/data/en`,
      // Stream from the first byte (a small export is read whole and gets a 502), and no retry.
      BUFFER_BYTES: "0",
      UPSTREAM_RETRIES: "0",
      PAGE_SIZE: String(PAGE_SIZE),
    };
    [workers.plain, workers.cached] = await Promise.all([
      startWorker({ vars: { ...vars, CACHE_TTL_SECONDS: "0" } }),
      startWorker({ vars: { ...vars, CACHE_TTL_SECONDS: "300" } }),
    ]);
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled([workers.plain?.stop(), workers.cached?.stop(), emulator?.close()]);
  }, 30_000);

  /** One export whose page at `offset` fails (`destroy`: the connection drops instead of a 500). */
  async function exportFailingAt(
    worker: keyof typeof workers,
    format: Format,
    offset: number,
    destroy = false,
  ): Promise<WireResponse> {
    emulator.setFault((_, body) =>
      body.offset !== offset ? undefined : destroy ? "destroy" : new Response("upstream broke", { status: 500 }),
    );
    try {
      // no-cache: each case exports afresh (and fills the cache beside it) rather than finding another's entry.
      return await getRaw(`${workers[worker]!.url}/export.${format}?resource=sample&limit=${LIMIT}&fields=id`, {
        headers: { "cache-control": "no-cache" },
      });
    } finally {
      emulator.setFault(undefined);
    }
  }

  for (const worker of ["plain", "cached"] as const) {
    describe(worker === "plain" ? "streamed to the client only" : "streamed while filling the edge cache", () => {
      for (const { page, offset } of WHERE) {
        for (const format of ["csv", "tsv", "ndjson"] as const) {
          it(`${format.toUpperCase()}, failing on ${page}: its rows, the #EXPORT INCOMPLETE line last, then a broken transfer`, async () => {
            const res = await exportFailingAt(worker, format, offset);

            expect(res.status).toBe(200);
            const lines = res.body.toString("utf8").split(/\r?\n/);
            if (lines.at(-1) === "") lines.pop();
            expect(lines.at(-1)).toMatch(
              /^"?#EXPORT INCOMPLETE: CKAN answered HTTP 500\b.*only part of the export\."?$/,
            );
            expect(idsOf(format, lines.slice(0, -1))).toEqual(firstIds(offset));
            expectBrokenTransfer(res);
          });
        }

        it(`XLSX, failing on ${page}: no ZIP a spreadsheet would open, then a broken transfer`, async () => {
          const res = await exportFailingAt(worker, "xlsx", offset);

          expect(res.status).toBe(200);
          expect(res.body.subarray(0, 2).toString("latin1")).toBe("PK");
          // A ZIP is read from its end (the central directory), which a cut-off workbook never has.
          await expect(unzip(new Uint8Array(res.body))).rejects.toThrow();
          expectBrokenTransfer(res);
        });

        it(`JSON, failing on ${page}: every record before it, no closing ], then a broken transfer`, async () => {
          const res = await exportFailingAt(worker, "json", offset);

          expect(res.status).toBe(200);
          const text = res.body.toString("utf8");
          expect(() => JSON.parse(text)).toThrow();
          // Only the end is missing: closing the array gives exactly the rows before the failed page.
          const records = JSON.parse(`${text}\n]`) as Array<{ id: number }>;
          expect(records.map((record) => record.id)).toEqual(firstIds(offset));
          expectBrokenTransfer(res);
        });
      }
    });
  }

  it("NDJSON, the upstream connection dropped on page 2: the incomplete line last, then a broken transfer", async () => {
    const res = await exportFailingAt("plain", "ndjson", PAGE_SIZE, true);

    expect(res.status).toBe(200);
    const lines = res.body.toString("utf8").trimEnd().split("\n");
    expect(lines.at(-1)).toMatch(/^#EXPORT INCOMPLETE: .*only part of the export\.$/);
    expect(idsOf("ndjson", lines.slice(0, -1))).toEqual(firstIds(PAGE_SIZE));
    expectBrokenTransfer(res);
  });
});
