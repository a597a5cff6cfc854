import Papa from "papaparse";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { freePort, getRaw, isolatedEnv } from "./harness.mts";

// `npm start -- --port N --emulator-port M --ckan 2.11 --sql on`: our switches are taken out of what goes to
// wrangler (which refuses a second --port), the emulator listens where it is told and answers as the
// CKAN release asked for. An empty --env-file of the spec's own keeps the developer's .dev.vars out.

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

describe("npm start's switches", () => {
  let child: ChildProcess;
  let output = "";
  let folder: string;
  let port: number;
  let emulatorPort: number;

  beforeAll(async () => {
    [port, emulatorPort] = [await freePort(), await freePort()];
    folder = await mkdtemp(join(tmpdir(), "datastore-export-start-"));
    const empty = join(folder, "empty.env");
    await writeFile(empty, "");
    child = spawn(
      process.execPath,
      [
        join(ROOT, "scripts", "start.ts"),
        "--port",
        String(port),
        `--emulator-port=${emulatorPort}`,
        "--ckan",
        "2.11",
        "--sql",
        "on",
        "--env-file",
        empty,
        "--persist-to",
        folder,
        "--inspector-port",
        String(await freePort()),
        "--show-interactive-dev-session=false",
      ],
      { cwd: ROOT, env: isolatedEnv(), stdio: ["ignore", "pipe", "pipe"], detached: true },
    );
    child.stdout?.on("data", (chunk: Buffer) => void (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => void (output += chunk.toString()));
    const deadline = Date.now() + 60_000;
    while (!/Try these links/.test(output)) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not come up:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  afterAll(async () => {
    if (child?.pid !== undefined) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it("serves the worker on --port and the emulator on --emulator-port, as CKAN 2.11", async () => {
    const status = await getRaw(`http://127.0.0.1:${emulatorPort}/data/en/api/3/action/status_show`);
    expect((JSON.parse(status.body.toString()) as { result: { ckan_version: string } }).result.ckan_version).toBe(
      "2.11.5",
    );
    const csv = await getRaw(`http://127.0.0.1:${port}/export.csv?resource=sample&fields=id,amount&limit=2`);
    expect(csv.status).toBe(200);
    expect(csv.body.toString().split("\r\n")[0]).toBe("id,amount");
    expect(output).toContain(`answering as CKAN 2.11`);
    // The demo's largest-amounts link: descending, nulls after the values, on a CKAN without NULLS LAST.
    const largest = `http://127.0.0.1:${port}/export.csv?resource=sample&q=glacier&fields=id,name,amount&sort=amount%20desc%20nulls%20last&limit=20`;
    expect(output).toContain(largest);
    const rows = Papa.parse<string[]>((await getRaw(largest)).body.toString().trimEnd()).data.slice(1);
    expect(rows).toHaveLength(20);
    const amounts = rows.map((row) => row[2] ?? "");
    expect(amounts.every((amount) => amount !== "")).toBe(true);
    expect(amounts.map(Number)).toEqual(amounts.map(Number).sort((a, b) => b - a));
  });

  it("with --sql on, the emulator answers datastore_search_sql from PostgreSQL", async () => {
    const sql = 'SELECT category, count(*) AS n FROM "edge" GROUP BY 1 ORDER BY 1 LIMIT 1';
    const answer = await getRaw(
      `http://127.0.0.1:${emulatorPort}/data/en/api/3/action/datastore_search_sql?${new URLSearchParams({ sql })}`,
      { timeoutMs: 50_000 },
    );
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body.toString())).toMatchObject({
      success: true,
      result: { records: [{ category: "alpha", n: 864 }] },
    });
    expect(output).toContain("datastore_search_sql: on");
  });

  it("refuses --sql other than on or off, naming the switch", async () => {
    const bad = spawn(process.execPath, [join(ROOT, "scripts", "start.ts"), "--sql", "yes"], {
      cwd: ROOT,
      env: isolatedEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let err = "";
    bad.stderr.on("data", (chunk: Buffer) => void (err += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => bad.once("exit", resolve));
    expect(code).toBe(2);
    expect(err.trim()).toBe("npm start: --sql must be on or off, not yes");
  });

  it("refuses a port that is not one, naming the switch", async () => {
    const bad = spawn(process.execPath, [join(ROOT, "scripts", "start.ts"), "--port", "80a"], {
      cwd: ROOT,
      env: isolatedEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let err = "";
    bad.stderr.on("data", (chunk: Buffer) => void (err += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => bad.once("exit", resolve));
    expect(code).toBe(2);
    expect(err.trim()).toBe('npm start: --port must be a port number from 1 to 65535, not "80a"');
  });
});
