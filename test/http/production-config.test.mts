// The operator's configuration (wrangler.toml's top level, no demo values) in `wrangler dev`, read
// with node:http: what a new deployment answers before and after CKAN_BASE_URL is set, and /health
// in each state an operator meets.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { experimental_readRawConfig } from "wrangler";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";
import { freePort, getRaw, isolatedEnv, startWorker, type WorkerProcess } from "./harness.mts";
import { pristineProductionConfig, type ConfigCopy } from "./pristine-config.mts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The production wrangler.toml as shipped: never the operator's settings, even after npm run setup. */
const PRODUCTION = pristineProductionConfig();
const PRODUCTION_CONFIG = PRODUCTION.path;
/** The operator's copy that setup writes (a second pristine copy, which setup then fills in). */
const SET_UP: ConfigCopy = pristineProductionConfig();
const SET_UP_CONFIG = SET_UP.path;
const TOKEN = "operator-token-5d1c";
const RESOURCES = JSON.stringify({
  grants: "e1d9e5a7-12c0-4b6e-9a3f-5c2d8e7f4b10",
  closed: "60686d2e-91d1-493b-9746-5c5f1b5b118e",
});

interface Health {
  ok: boolean;
  ckan: { version: string | null; reachable: boolean };
  token: { accepted: boolean | null };
  problems: string[];
}
const json = <T,>(body: Buffer): T => JSON.parse(body.toString("utf8")) as T;

describe("the production configuration, as deployed", () => {
  let emulator: EmulatorServer;
  const workers: Record<"unset" | "set" | "down" | "wrongToken" | "demo", WorkerProcess | undefined> = {
    unset: undefined,
    set: undefined,
    down: undefined,
    wrongToken: undefined,
    demo: undefined,
  };

  beforeAll(async () => {
    emulator = await startEmulatorServer({ port: 0, token: TOKEN, version: "2.12" });
    const base = `${emulator.url}/data/en`;
    const nobody = `http://127.0.0.1:${await freePort()}/data/en`;
    // The operator's way: npm run setup writes the base and the aliases; the token stays a secret
    // (here a --var, as .dev.vars or `wrangler secret put` would give it).
    // Asynchronously: the emulator answering setup lives in this process.
    const setup = spawn(
      process.execPath,
      [
        join(ROOT, "scripts", "setup.ts"),
        "--ckan",
        base,
        "--resource",
        "grants=e1d9e5a7-12c0-4b6e-9a3f-5c2d8e7f4b10",
        "--resource",
        "closed=60686d2e-91d1-493b-9746-5c5f1b5b118e",
        "--snapshot",
        "grants=0 3 * * *",
        "--yes",
        "--config",
        SET_UP_CONFIG,
      ],
      { cwd: ROOT, env: { ...isolatedEnv(), CKAN_API_TOKEN: TOKEN }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stderr = "";
    setup.stderr.on("data", (chunk: Buffer) => void (stderr += chunk.toString()));
    expect(await new Promise((resolve) => setup.once("exit", resolve)), stderr).toBe(0);
    const start = (vars: Record<string, string>) => startWorker({ config: PRODUCTION_CONFIG, vars });
    [workers.unset, workers.set, workers.down, workers.wrongToken, workers.demo] = await Promise.all([
      start({}),
      startWorker({ config: SET_UP_CONFIG, vars: { CKAN_API_TOKEN: TOKEN } }),
      start({ CKAN_BASE_URL: nobody, RESOURCES, CKAN_API_TOKEN: TOKEN }),
      start({ CKAN_BASE_URL: base, RESOURCES, CKAN_API_TOKEN: "not-it-7a7a" }),
      startWorker({ vars: { CKAN_BASE_URL: base, CKAN_API_TOKEN: TOKEN } }),
    ]);
  }, 180_000);

  afterAll(async () => {
    await Promise.allSettled([...Object.values(workers).map((w) => w?.stop()), emulator?.close()]);
    PRODUCTION.remove();
    SET_UP.remove();
  }, 30_000);

  it("is read without the operator's settings: a set-up wrangler.toml gives the specs the same configuration as a fresh one", () => {
    // SET_UP_CONFIG is now what an operator's checkout holds after npm run setup.
    const read = (path: string) =>
      JSON.parse(JSON.stringify(experimental_readRawConfig({ config: path }).rawConfig)) as {
        vars?: Record<string, unknown>;
        triggers?: { crons?: string[] };
      };
    const configured = read(SET_UP_CONFIG);
    expect(configured.vars?.["CKAN_BASE_URL"]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/data\/en$/);
    expect(Object.keys(configured.vars?.["RESOURCES"] as object)).toEqual(["grants", "closed"]);
    expect(configured.triggers?.crons).toEqual(["0 3 * * *"]);
    const again = pristineProductionConfig(SET_UP_CONFIG);
    try {
      const specs = read(again.path);
      expect(specs).toEqual(read(PRODUCTION_CONFIG));
      expect(specs.vars?.["CKAN_BASE_URL"]).toBeUndefined();
      expect(specs.vars?.["SNAPSHOT_JOBS"]).toBeUndefined();
      expect({ ...(specs.vars?.["RESOURCES"] as object) }).toEqual({});
      expect(specs.triggers?.crons ?? []).toEqual([]);
      expect(specs.vars?.["MAX_ROWS"]).toBe("1000000");
    } finally {
      again.remove();
    }
  });

  it("answers every route 503 naming CKAN_BASE_URL until it is set, never a 502 from a loopback address", async () => {
    for (const path of ["/export.csv?resource=grants", "/health", "/resources", "/"]) {
      const res = await getRaw(`${workers.unset!.url}${path}`);
      expect(res.status, path).toBe(503);
      const { error } = json<{ error: { setting: string; message: string } }>(res.body);
      expect(error.setting).toBe("CKAN_BASE_URL");
      expect(error.message).toContain("npm run setup");
    }
  });

  it("once npm run setup has written it, /health is 200 naming CKAN's version, and the table exports exactly as the demo does", async () => {
    const health = await getRaw(`${workers.set!.url}/health`);
    expect(health.status).toBe(200);
    const body = json<Health>(health.body);
    expect(body.ckan.version).toMatch(/^2\.12/);
    expect(body.token.accepted).toBe(true);
    expect(health.body.toString()).not.toContain(TOKEN);
    for (const format of ["csv", "json", "xlsx"]) {
      const exported = await getRaw(`${workers.set!.url}/export.${format}?resource=grants`);
      expect(exported.status, format).toBe(200);
      expect(exported.complete, format).toBe(true);
      // The edge table, byte for byte what the demo's worker sends (test/exact.test.ts holds those
      // bytes against CKAN's own answers).
      const demo = await getRaw(`${workers.demo!.url}/export.${format}?resource=edge`);
      expect(exported.body.equals(demo.body), format).toBe(true);
    }
  });

  it("on the wire: discovery answers If-None-Match with a 304, and a method a route does not take with a 405 naming the ones it does", async () => {
    const first = await getRaw(`${workers.set!.url}/resources/grants`);
    expect(first.status).toBe(200);
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    const again = await getRaw(`${workers.set!.url}/resources/grants`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(again.body.byteLength).toBe(0);
    const posted = await fetch(`${workers.set!.url}/resources`, { method: "POST" });
    expect(posted.status).toBe(405);
    expect(posted.headers.get("allow")).toBe("GET");
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
