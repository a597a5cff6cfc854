// The operator's configuration (wrangler.toml's top level, no demo values) in `wrangler dev`, read
// with node:http: what a new deployment answers before and after CKAN_BASE_URL is set, and /health
// in each state an operator meets.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";
import { freePort, getRaw, startWorker, type WorkerProcess } from "./harness.mts";

const PRODUCTION_CONFIG = fileURLToPath(new URL("../../wrangler.toml", import.meta.url));
const TOKEN = "operator-token-5d1c";
const RESOURCES = JSON.stringify({ grants: "e1d9e5a7-12c0-4b6e-9a3f-5c2d8e7f4b10", closed: "60686d2e-91d1-493b-9746-5c5f1b5b118e" });

interface Health {
  ok: boolean;
  ckan: { version: string | null; reachable: boolean };
  token: { accepted: boolean | null };
  problems: string[];
}
const json = <T,>(body: Buffer): T => JSON.parse(body.toString("utf8")) as T;

describe("the production configuration, as deployed", () => {
  let emulator: EmulatorServer;
  const workers: Record<"unset" | "set" | "down" | "wrongToken", WorkerProcess | undefined> = { unset: undefined, set: undefined, down: undefined, wrongToken: undefined };

  beforeAll(async () => {
    emulator = await startEmulatorServer({ port: 0, token: TOKEN, version: "2.12" });
    const base = `${emulator.url}/data/en`;
    const nobody = `http://127.0.0.1:${await freePort()}/data/en`;
    const start = (vars: Record<string, string>) => startWorker({ config: PRODUCTION_CONFIG, vars });
    [workers.unset, workers.set, workers.down, workers.wrongToken] = await Promise.all([
      start({}),
      start({ CKAN_BASE_URL: base, RESOURCES, CKAN_API_TOKEN: TOKEN }),
      start({ CKAN_BASE_URL: nobody, RESOURCES, CKAN_API_TOKEN: TOKEN }),
      start({ CKAN_BASE_URL: base, RESOURCES, CKAN_API_TOKEN: "not-it-7a7a" }),
    ]);
  }, 180_000);

  afterAll(async () => {
    await Promise.allSettled([...Object.values(workers).map((w) => w?.stop()), emulator?.close()]);
  }, 30_000);

  it("answers every route 503 naming CKAN_BASE_URL until it is set, never a 502 from a loopback address", async () => {
    for (const path of ["/export.csv?resource=grants", "/health", "/resources", "/"]) {
      const res = await getRaw(`${workers.unset!.url}${path}`);
      expect(res.status, path).toBe(503);
      const { error } = json<{ error: { setting: string; message: string } }>(res.body);
      expect(error.setting).toBe("CKAN_BASE_URL");
      expect(error.message).toContain("npm run setup");
    }
  });

  it("once set, /health is 200 naming CKAN's version, and the table exports exactly", async () => {
    const health = await getRaw(`${workers.set!.url}/health`);
    expect(health.status).toBe(200);
    const body = json<Health>(health.body);
    expect(body.ckan.version).toMatch(/^2\.12/);
    expect(body.token.accepted).toBe(true);
    expect(health.body.toString()).not.toContain(TOKEN);
    const csv = await getRaw(`${workers.set!.url}/export.csv?resource=grants`);
    expect(csv.status).toBe(200);
    expect(csv.complete).toBe(true);
    // The edge table: its header and 4,321 rows, each value as CKAN wrote it (test/exact.test.ts
    // compares them value by value in-process).
    expect(csv.body.toString("utf8").split("\r\n").filter((line) => /^\d+,/.test(line)).length).toBeGreaterThanOrEqual(4321);
    expect(csv.body.toString("utf8")).toContain("12345678901234567890.123456789");
  });

  it("/health is 503 naming the cause when CKAN is down", async () => {
    const res = await getRaw(`${workers.down!.url}/health`);
    expect(res.status).toBe(503);
    const body = json<Health>(res.body);
    expect(body.ckan.reachable).toBe(false);
    expect(body.problems[0]).toContain("CKAN did not answer");
  });

  it("/health is 503 naming the cause when CKAN refuses the token", async () => {
    const res = await getRaw(`${workers.wrongToken!.url}/health`);
    expect(res.status).toBe(503);
    const body = json<Health>(res.body);
    expect(body.token.accepted).toBe(false);
    expect(body.problems.join(" ")).toContain("Alias closed");
    expect(res.body.toString()).not.toContain("not-it-7a7a");
  });
});
