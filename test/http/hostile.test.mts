// Issue 25 on the wire: the worker in `wrangler dev`, the CKAN emulator turned hostile, and clients
// that are Node's own sockets. What an in-process spec cannot see: the runtime's own output (no
// `Uncaught` line carries upstream text or a secret), clients whose TCP windows fill and stop, and
// a redirect that a real fetch would follow.
import { createServer, get, type IncomingMessage, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMULATOR_RESOURCES } from "../../emulator/index.ts";
import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";
import { getRaw, startWorker, type WorkerProcess } from "./harness.mts";

const TOKEN = `eyJhbGciOiJIUzI1NiJ9.${"wireTOKEN-0123456789".repeat(9)}.tail`;
const ADMIN = "wire-admin-token-4d5e6f7a8b";
const SECRETS = [TOKEN, ADMIN];
const ALL = SECRETS.join(" ");
const STALL_SECONDS = 2;

function leaks(text: string): string[] {
  const found = new Set<string>();
  for (const secret of SECRETS)
    for (let i = 0; i + 8 <= secret.length; i++)
      if (text.includes(secret.slice(i, i + 8))) found.add(secret.slice(i, i + 8));
  return [...found];
}

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The one report workerd makes of a body that JavaScript ends with an error (its inspector's
 * `Uncaught`, see src/http/freed-once-written.ts): fixed words, never upstream text.
 */
const DOWNLOAD_CUT = /Uncaught DownloadCut: download cut short \(the request's log line says why\)/;
const uncaughtLines = (output: string): string[] => output.split("\n").filter((line) => /Uncaught/.test(line));

/** A download that reads its first bytes and then stops reading: the socket's windows fill up. */
function stalledDownload(url: string, client: string): Promise<{ status: number; res: IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const request = get(url, { agent: false, headers: { "cf-connecting-ip": client } }, (res) => {
      res.once("data", () => {
        res.pause();
        resolve({ status: res.statusCode ?? 0, res });
      });
      res.once("end", () => resolve({ status: res.statusCode ?? 0, res }));
    });
    request.on("error", reject);
  });
}

describe("a hostile upstream and stalling clients, on the wire", () => {
  let emulator: EmulatorServer;
  let worker: WorkerProcess;
  let elsewhere: Server;
  let elsewhereUrl = "";
  let elsewhereHits = 0;

  beforeAll(async () => {
    emulator = await startEmulatorServer({ port: 0, version: "2.10", token: TOKEN });
    elsewhere = createServer((_, res) => {
      elsewhereHits++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          success: true,
          result: { fields: [{ id: "stolen", type: "text" }], records: [["rows from elsewhere"]], total: 1 },
        }),
      );
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, "127.0.0.1", resolve));
    const address = elsewhere.address();
    elsewhereUrl = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`;
    worker = await startWorker({
      vars: {
        CKAN_BASE_URL: emulator.base,
        CKAN_API_TOKEN: TOKEN,
        RESOURCES: JSON.stringify({ sample: EMULATOR_RESOURCES.sample, big: EMULATOR_RESOURCES.big }),
        ADMIN_TOKEN: ADMIN,
        BUFFER_BYTES: "0",
        UPSTREAM_RETRIES: "0",
        PAGE_SIZE: "1000",
        CACHE_TTL_SECONDS: "0",
        STALL_SECONDS: String(STALL_SECONDS),
      },
    });
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled([worker?.stop(), emulator?.close(), new Promise((resolve) => elsewhere?.close(resolve))]);
  }, 30_000);

  const afterFirstPage = (answer: () => Response | "destroy") => (_: number, body: Record<string, unknown>) =>
    typeof body.offset === "number" && body.offset > 0 ? answer() : undefined;

  const faults: [string, (n: number, body: Record<string, unknown>) => Response | "destroy" | undefined][] = [
    [
      "echoes the secrets in a validation error",
      afterFirstPage(() =>
        Response.json(
          { help: ALL, success: false, error: { __type: "Validation Error", [`filters ${ALL}`]: [`near ${ALL}`] } },
          { status: 409 },
        ),
      ),
    ],
    ["resets the connection mid-export", afterFirstPage(() => "destroy")],
    [
      "sends invalid JSON",
      afterFirstPage(
        () =>
          new Response(`{"success": true, "result": {"fields": [${ALL}`, {
            headers: { "content-type": "application/json" },
          }),
      ),
    ],
  ];
  for (const [name, fault] of faults) {
    it(`an upstream that ${name}: the download ends with its #EXPORT INCOMPLETE line, no secret anywhere`, async () => {
      emulator.setFault(fault);
      const before = uncaughtLines(worker.output()).length;
      try {
        const res = await getRaw(`${worker.url}/export.csv?resource=sample&limit=3000&fields=id,name`);
        expect(res.status).toBe(200);
        expect(res.complete).toBe(false);
        // The runtime reports the cut once, in fixed words, as a dropped connection: no second
        // `Uncaught exception: ...` from its HTTP server.
        for (let i = 0; i < 50 && uncaughtLines(worker.output()).length === before; i++) await delay(100);
        await delay(300);
        const reported = uncaughtLines(worker.output()).slice(before);
        expect(reported).toHaveLength(1);
        expect(reported[0]).toMatch(DOWNLOAD_CUT);
        const text = res.body.toString("utf8");
        expect(text.trimEnd().split(/\r?\n/).at(-1)).toMatch(/^"?#EXPORT INCOMPLETE: /);
        expect(leaks(text)).toEqual([]);
        expect(leaks(JSON.stringify(res.headers))).toEqual([]);
      } finally {
        emulator.setFault(undefined);
      }
    });
  }

  it("an upstream that redirects elsewhere: a 502 naming the status and the origin, and the other host is never asked", async () => {
    emulator.setFault(
      () =>
        new Response(null, {
          status: 307,
          headers: { location: `${elsewhereUrl}/api/action/datastore_search?${TOKEN}` },
        }),
    );
    try {
      const res = await getRaw(`${worker.url}/export.csv?resource=sample&limit=5`);
      expect(res.status).toBe(502);
      const { error } = JSON.parse(res.body.toString("utf8")) as { error: { message: string } };
      expect(error.message).toContain("HTTP 307");
      expect(error.message).toContain(elsewhereUrl);
      expect(leaks(error.message)).toEqual([]);
      expect(elsewhereHits).toBe(0);
    } finally {
      emulator.setFault(undefined);
    }
  });

  it("clients that stop reading: one client gets 3 places, the isolate's other clients are served at once, and the stalled downloads are stopped", async () => {
    // A million rows: far more than the sockets and wrangler's proxy between client and worker hold.
    const big = `${worker.url}/export.csv?resource=big`;
    const stalled = await Promise.all([1, 2, 3].map(() => stalledDownload(big, "198.51.100.1")));
    expect(stalled.map((s) => s.status)).toEqual([200, 200, 200]);
    const fourth = await getRaw(`${big}&fields=id`, { headers: { "cf-connecting-ip": "198.51.100.1" } });
    expect(fourth.status).toBe(429);
    expect(Number(fourth.headers["retry-after"])).toBeGreaterThan(0);
    // Another client is answered at once.
    const other = await getRaw(`${worker.url}/export.csv?resource=sample&limit=10`, {
      headers: { "cf-connecting-ip": "198.51.100.2" },
    });
    expect(other.status).toBe(200);
    expect(other.complete).toBe(true);
    // After the stall time the worker stops them: the request log says 408 for each.
    for (let i = 0; i < 100 && (worker.output().match(/"status":408/g) ?? []).length < 3; i++) await delay(100);
    expect((worker.output().match(/"status":408/g) ?? []).length).toBeGreaterThanOrEqual(3);
    expect(worker.output()).toMatch(/no progress for 2 s/);
    for (const { res } of stalled) res.destroy();
    // Its places are free again.
    const again = await getRaw(`${worker.url}/export.csv?resource=sample&limit=10`, {
      headers: { "cf-connecting-ip": "198.51.100.1" },
    });
    expect(again.status).toBe(200);
  });

  it("the runtime's own output holds no secret and no Uncaught line but the fixed one of a download cut short", async () => {
    await delay(500);
    const output = worker.output();
    expect(leaks(output)).toEqual([]);
    expect(uncaughtLines(output).filter((line) => !DOWNLOAD_CUT.test(line))).toEqual([]);
    expect(output).not.toMatch(/Uncaught exception/);
    expect(output).not.toMatch(/Uncaught HttpError/);
  });
});
