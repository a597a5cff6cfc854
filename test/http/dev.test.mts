// `npm run dev`: the operator's own configuration in `wrangler dev`, beside npm start's demo. It
// takes a port of its own and says which, refuses a taken one instead of quietly moving (as wrangler
// would, leaving README's curl lines on the demo), and answers /__scheduled (--test-scheduled) for
// the crons it names.
// The spec's wrangler.toml is the shipped one (pristine-config.mts), never this checkout's.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { EMULATOR_RESOURCES } from "../../emulator/index.ts";
import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";
import { setProductionVars } from "../../scripts/wrangler-toml.ts";
import { freePort, getRaw, isolatedEnv } from "./harness.mts";
import { pristineProductionConfig } from "./pristine-config.mts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

function run(
  script: string,
  args: string[],
): { child: ChildProcess; output: () => string; exit: Promise<number | null> } {
  const child = spawn(process.execPath, [join(ROOT, "scripts", script), ...args], {
    cwd: ROOT,
    env: isolatedEnv(),
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => void (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => void (output += chunk.toString()));
  return { child, output: () => output, exit: new Promise((resolve) => child.once("exit", resolve)) };
}

describe("npm run dev", () => {
  const config = pristineProductionConfig();
  let emulator: EmulatorServer;
  let dev: ReturnType<typeof run>;
  let folder: string;
  let port: number;

  beforeAll(async () => {
    emulator = await startEmulatorServer({ port: 0 });
    // What npm run setup would have written: the emulator, one alias, one small nightly job.
    const job = {
      name: "sample-nightly",
      resource: "sample",
      formats: ["csv"],
      cron: "15 2 * * *",
      keep: 3,
      limit: 100,
    };
    await writeFile(
      config.path,
      setProductionVars(await readFile(config.path, "utf8"), {
        base: emulator.base,
        resources: new Map([["sample", EMULATOR_RESOURCES.sample]]),
        jobs: [job],
      }),
    );
    port = await freePort();
    folder = await mkdtemp(join(tmpdir(), "datastore-export-dev-"));
    const empty = join(folder, "empty.env");
    await writeFile(empty, "");
    dev = run("dev.ts", [
      "--port",
      String(port),
      "--config",
      config.path,
      "--env-file",
      empty,
      "--persist-to",
      folder,
      "--inspector-port",
      String(await freePort()),
      "--show-interactive-dev-session=false",
      "--var",
      "CKAN_API_TOKEN:demo-token",
    ]);
    const deadline = Date.now() + 60_000;
    while (!/Your worker \(.*\) on/.test(dev.output())) {
      if (dev.child.exitCode !== null || Date.now() > deadline)
        throw new Error(`npm run dev did not come up:\n${dev.output()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, 90_000);

  afterAll(async () => {
    if (dev?.child.pid !== undefined) {
      try {
        process.kill(-dev.child.pid, "SIGTERM");
      } catch {
        // already gone
      }
      await Promise.race([dev.exit, new Promise((resolve) => setTimeout(resolve, 5000))]);
      try {
        process.kill(-dev.child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    await emulator?.close();
    config.remove();
    if (folder) await rm(folder, { recursive: true, force: true });
  }, 30_000);

  it("prints the address it serves on, where /health answers, and a /__scheduled line per cron of the config, which it takes", async () => {
    expect(dev.output()).toContain(`Your worker (${config.path}) on http://127.0.0.1:${port}:`);
    expect(dev.output()).toContain(
      `curl "http://127.0.0.1:${port}/__scheduled?cron=15+2+*+*+*"   (runs the snapshot jobs of 15 2 * * *)`,
    );
    const health = await getRaw(`http://127.0.0.1:${port}/health`);
    expect(health.status, health.body.toString()).toBe(200);
    const scheduled = await getRaw(`http://127.0.0.1:${port}/__scheduled?cron=15+2+*+*+*`);
    expect(scheduled.status).toBe(200);
  });

  it("refuses a taken port, naming it, where wrangler alone would quietly take another (npm start too)", async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const taken = (holder.address() as { port: number }).port;
    try {
      for (const script of ["dev.ts", "start.ts"]) {
        const refused = run(
          script,
          ["--port", String(taken), "--emulator-port", String(await freePort())].slice(0, script === "dev.ts" ? 2 : 4),
        );
        expect(await refused.exit, refused.output()).toBe(2);
        expect(refused.output()).toMatch(new RegExp(`127\\.0\\.0\\.1:${taken} is taken.*--port`));
      }
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });
});
