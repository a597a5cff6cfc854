import { copyFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { EMULATOR_RESOURCES } from "../../emulator/index.ts";
import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";
import { DEMO_CONFIG, getRaw, startWorker, type WorkerProcess } from "./harness.mts";

// A developer keeps local settings beside the config wrangler reads (.dev.vars, else .env): the
// README's signing step puts a LINK_SIGNING_KEY there, after which every unsigned link is a 403.
// The specs' `wrangler dev` must not see them. Shown on a copy of the demo config in a folder that
// holds both files, so no developer's own files are touched: read as wrangler reads them by itself,
// the key locks the link; as the harness starts every spec's worker, it does not.

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

describe("local settings never reach the specs' worker", () => {
  let emulator: EmulatorServer;
  let folder: string;
  let config: string;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    emulator = await startEmulatorServer({ port: 0, version: "2.12" });
    folder = await mkdtemp(join(tmpdir(), "datastore-export-local-settings-"));
    config = join(folder, "wrangler.toml");
    // The copy's paths point back into the project.
    const text = (await readFile(DEMO_CONFIG, "utf8"))
      .replace('main = "../src/index.ts"', `main = ${JSON.stringify(join(ROOT, "src", "index.ts"))}`)
      .replace('directory = "../public"', `directory = ${JSON.stringify(join(ROOT, "public"))}`);
    await writeFile(config, text);
    await writeFile(join(folder, ".dev.vars"), "LINK_SIGNING_KEY=developer-local-signing-key-0123456789\n");
    await copyFile(join(folder, ".dev.vars"), join(folder, ".env"));
  });

  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    await emulator?.close();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  const vars = () => ({
    CKAN_BASE_URL: `${emulator.url}/data/en`,
    RESOURCES: JSON.stringify(EMULATOR_RESOURCES),
    CACHE_TTL_SECONDS: "0",
  });

  it("read by wrangler itself, the key in .dev.vars turns an unsigned link into a 403", async () => {
    const worker = await startWorker({ vars: vars(), config, localSettings: "read" });
    workers.push(worker);
    const answer = await getRaw(`${worker.url}/export.csv?resource=sample&limit=2`);
    expect(answer.status).toBe(403);
    expect(answer.body.toString()).toMatch(/sig/);
    expect(worker.output()).toContain(".dev.vars");
  });

  it("started as the specs start it, the same worker answers the unsigned link", async () => {
    const worker = await startWorker({ vars: vars(), config });
    workers.push(worker);
    const answer = await getRaw(`${worker.url}/export.csv?resource=sample&limit=2`);
    expect(answer.status, answer.body.toString()).toBe(200);
    expect(answer.body.toString().split("\r\n")[0]).toBe("id,amount,ratio,category,name,note,formula,created,active");
    expect(worker.output()).not.toContain(".dev.vars");
  });
});
