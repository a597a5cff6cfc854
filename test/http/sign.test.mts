// `npm run sign` and POST /links share one check (checkLinkToSign): what the worker refuses to sign,
// the script refuses too, with the worker's own message; what either signs, the worker serves.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";
import { DEMO_CONFIG, isolatedEnv, startWorker, type WorkerProcess } from "./harness.mts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const KEY = "sign-spec-key-0123456789abcdef0123";
const ADMIN = "sign-spec-admin-4d2e";

async function sign(link: string, origin: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // The key from the environment, so the developer's .dev.vars is never read; the demo's settings.
  const child = spawn(
    process.execPath,
    [join(ROOT, "scripts", "sign.ts"), link, "--origin", origin, "--config", DEMO_CONFIG],
    {
      cwd: ROOT,
      env: { ...isolatedEnv(), LINK_SIGNING_KEY: KEY },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => void (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => void (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { code, stdout, stderr };
}

describe("npm run sign", () => {
  let emulator: EmulatorServer;
  let worker: WorkerProcess;

  beforeAll(async () => {
    emulator = await startEmulatorServer({ port: 0 });
    worker = await startWorker({
      vars: { CKAN_BASE_URL: emulator.base, CKAN_API_TOKEN: "demo-token", LINK_SIGNING_KEY: KEY, ADMIN_TOKEN: ADMIN },
    });
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled([worker?.stop(), emulator?.close()]);
  }, 30_000);

  const post = (link: string) =>
    fetch(`${worker.url}/links`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ link }),
    });

  it("refuses what POST /links refuses, with the worker's own message", async () => {
    for (const link of [
      "/export.csv?resource=sample&limit=ten",
      "/export.csv?resource=nope",
      "/snapshots/sample-daily/run",
    ]) {
      const refused = await post(link);
      expect([400, 404], link).toContain(refused.status);
      const { error } = (await refused.json()) as { error: { message: string; parameter?: string } };
      const run = await sign(link, worker.url);
      expect(run.code, link).toBe(1);
      expect(run.stdout, link).toBe("");
      expect(run.stderr, link).toContain(
        `(${refused.status}${error.parameter === undefined ? "" : `, parameter ${error.parameter}`}): ${error.message}`,
      );
      expect(run.stderr, link).not.toContain(KEY);
    }
  });

  it("signs what POST /links signs, the same link, which the worker then serves", async () => {
    const link = "/export.csv?resource=sample&fields=id,name&limit=5";
    const run = await sign(link, worker.url);
    expect(run.code, run.stderr).toBe(0);
    const posted = (await (await post(link)).json()) as { link: string };
    expect(run.stdout.trim()).toBe(posted.link);
    const served = await fetch(run.stdout.trim());
    expect(served.status).toBe(200);
    expect((await served.text()).split("\r\n")[0]).toBe("id,name");
  });
});
