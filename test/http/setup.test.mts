import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { experimental_readRawConfig } from "wrangler";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { EMULATOR_RESOURCES } from "../../emulator/index.ts";
import { startEmulatorServer, type EmulatorServer } from "../../emulator/server.ts";
import { withoutProductionVars } from "../../scripts/wrangler-toml.ts";
import { freePort, isolatedEnv } from "./harness.mts";
import { PROJECT_CONFIG } from "./pristine-config.mts";

// `npm run setup` against CKAN emulators on loopback, on a copy of the project's wrangler.toml as
// shipped (whatever setup wrote into this checkout's own taken out again): a
// run that succeeds writes what wrangler then reads (read back with wrangler's own reader), keeps
// every comment, and names what is left to do; each failure is one or two lines naming what to fix,
// exit 1, and the file byte for byte as it was. The token (recognisable) appears in no file written
// and no line printed.

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const TOKEN = "tok-SETUP-SECRET-5c1e";
const { sample, big, edge } = EMULATOR_RESOURCES;
const PRIVATE = EMULATOR_RESOURCES.private;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  config: string;
  before: string;
  after: string;
}

describe("npm run setup", () => {
  let ckan: EmulatorServer;
  let noDatastore: EmulatorServer;
  let html: Server;
  let htmlUrl: string;
  let folder: string;
  let runs = 0;

  beforeAll(async () => {
    ckan = await startEmulatorServer({ port: 0, token: TOKEN, version: "2.12" });
    noDatastore = await startEmulatorServer({ port: 0, token: TOKEN, version: "2.11", datastore: false });
    html = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end("<!doctype html><title>Open data</title><p>Welcome");
    });
    await new Promise<void>((resolve) => html.listen(0, "127.0.0.1", resolve));
    htmlUrl = `http://127.0.0.1:${(html.address() as AddressInfo).port}`;
    folder = await mkdtemp(join(tmpdir(), "datastore-export-setup-"));
  });

  afterAll(async () => {
    await ckan?.close();
    await noDatastore?.close();
    await new Promise((resolve) => html?.close(resolve));
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  /** One run of setup: on a fresh copy of the shipped wrangler.toml, or on `config` as an earlier run left it. */
  async function setup(args: string[], token?: string, input?: string, again?: string): Promise<Run> {
    const config = again ?? join(folder, `wrangler-${++runs}.toml`);
    if (again === undefined) await writeFile(config, withoutProductionVars(await readFile(PROJECT_CONFIG, "utf8")));
    const before = await readFile(config, "utf8");
    const env = isolatedEnv();
    delete env["CKAN_API_TOKEN"];
    if (token !== undefined) env["CKAN_API_TOKEN"] = token;
    const child = spawn(process.execPath, [join(ROOT, "scripts", "setup.ts"), ...args, "--config", config], {
      cwd: ROOT,
      env,
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    child.stdin?.end(input);
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (chunk: Buffer) => void (stdout += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => void (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    return { code, stdout, stderr, config, before, after: await readFile(config, "utf8") };
  }

  /** A failure: exit 1, one or two lines on stderr naming the fix, the config untouched, no token anywhere. */
  function expectFailure(run: Run, message: RegExp): void {
    expect(run.code, run.stdout + run.stderr).toBe(1);
    const lines = run.stderr.trimEnd().split("\n");
    expect(lines.length).toBeLessThanOrEqual(2);
    expect(lines[0]).toMatch(/^setup: /);
    expect(run.stderr).toMatch(message);
    expect(run.after).toBe(run.before);
    expect(run.stdout + run.stderr).not.toContain(TOKEN);
  }

  it("checks the site and each table, writes CKAN_BASE_URL, RESOURCES and a snapshot job, and says what is left", async () => {
    const page = `${ckan.url}/data/en/dataset/demo-private-grants/resource/${PRIVATE}`;
    const run = await setup(
      [
        "--ckan",
        `${ckan.url}/data/en/`,
        "--resource",
        `grants=${sample}`,
        "--resource",
        `secret=${page}`,
        "--snapshot",
        "grants=0 3 * * *",
        "--yes",
      ],
      TOKEN,
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe("");
    const { rawConfig } = experimental_readRawConfig({ config: run.config });
    const vars = rawConfig.vars as Record<string, unknown>;
    expect(vars["CKAN_BASE_URL"]).toBe(`${ckan.url}/data/en`);
    expect({ ...(vars["RESOURCES"] as object) }).toEqual({ grants: sample, secret: PRIVATE });
    expect(JSON.parse(String(vars["SNAPSHOT_JOBS"]))).toEqual([
      { name: "grants-snapshot", resource: "grants", formats: ["csv"], cron: "0 3 * * *", keep: 30 },
    ]);
    expect(rawConfig.triggers?.crons).toEqual(["0 3 * * *"]);
    expect(vars["MAX_ROWS"]).toBe("1000000");
    expect(rawConfig.r2_buckets).toEqual([{ binding: "SNAPSHOTS", bucket_name: "datastore-export-snapshots" }]);
    // Every comment of the file is still there, in order.
    const comments = (text: string) => text.split("\n").filter((line) => line.trimStart().startsWith("#"));
    expect(comments(run.after)).toEqual(comments(run.before));
    expect(run.stdout).toContain("CKAN 2.12.0b0");
    expect(run.stdout).toMatch(/secret = 60686d2e-\S+ {2}Private grants {2}\(private: read with the token\)/);
    const steps = [
      "wrangler secret put CKAN_API_TOKEN",
      "wrangler r2 bucket create datastore-export-snapshots",
      "wrangler deploy",
      "/health",
    ].map((step) => run.stdout.indexOf(step));
    expect(steps.every((at) => at > 0)).toBe(true);
    expect([...steps].sort((a, b) => a - b)).toEqual(steps);
    expect(run.after + run.stdout).not.toContain(TOKEN);
    expect((await readdir(folder)).filter((name) => name.startsWith(".wrangler-setup-"))).toEqual([]);
  });

  it("asks, when run without --yes: the token, a search by name, a pick, its alias, a schedule, a last yes", async () => {
    // Lines piped in as a terminal user would type them: the token, "grants" (a search), 4 (the
    // private table), an alias, Enter (done), a cron, y.
    const run = await setup(
      ["--ckan", `${ckan.url}/data/en`],
      undefined,
      `${TOKEN}\ngrants\n4\nstaff-only\n\n15 4 * * 1\ny\n`,
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/4\. Private grants \/ Private grants {2}\(60686d2e-/);
    const vars = experimental_readRawConfig({ config: run.config }).rawConfig.vars as Record<string, unknown>;
    expect({ ...(vars["RESOURCES"] as object) }).toEqual({ "staff-only": PRIVATE });
    expect(JSON.parse(String(vars["SNAPSHOT_JOBS"]))).toEqual([
      { name: "staff-only-snapshot", resource: "staff-only", formats: ["csv"], cron: "15 4 * * 1", keep: 30 },
    ]);
    expect(run.after + run.stdout + run.stderr).not.toContain(TOKEN);
    // Saying no at the end leaves the file as it was.
    expectFailure(
      await setup(["--ckan", `${ckan.url}/data/en`], undefined, `\n${sample}\nmine\n\n\nn\n`),
      /nothing written/,
    );
  });

  it("says a wrong token on public tables cannot be judged, since CKAN answers it as if none were sent", async () => {
    const run = await setup(["--ckan", `${ckan.url}/data/en`, "--resource", `big=${big}`, "--yes"], "not-the-token");
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("The token was not checked: every chosen table is public");
    expect(run.after).not.toContain("not-the-token");
  });

  it("fails on a host nobody answers on", async () => {
    const run = await setup(
      ["--ckan", `http://127.0.0.1:${await freePort()}/data/en`, "--resource", `a=${sample}`, "--yes"],
      TOKEN,
    );
    expectFailure(run, /cannot reach http:\/\/127\.0\.0\.1:\d+\/data\/en \(ECONNREFUSED\)/);
  });

  it("fails on a site that is not a CKAN (an HTML page)", async () => {
    const run = await setup(["--ckan", htmlUrl, "--resource", `a=${sample}`, "--yes"], TOKEN);
    expectFailure(run, /does not answer as a CKAN site \(status_show: HTTP 200, text\/html.*\n.*language segment/);
  });

  it("fails on a CKAN address with a segment missing or one too many, as the emulator answers those paths as a real CKAN does (HTML)", async () => {
    for (const base of [ckan.url, `${ckan.url}/data`, `${ckan.url}/data/en/dataset`]) {
      const run = await setup(["--ckan", base, "--resource", `a=${sample}`, "--yes"], TOKEN);
      expectFailure(run, /does not answer as a CKAN site \(status_show: HTTP 404, text\/html.*\n.*language segment/);
    }
  });

  it("fails on a CKAN without the DataStore", async () => {
    const run = await setup(["--ckan", `${noDatastore.url}/data/en`, "--resource", `a=${sample}`, "--yes"], TOKEN);
    expectFailure(run, /is CKAN 2\.11\.5 without the DataStore/);
  });

  it("fails on a table the DataStore does not have", async () => {
    const run = await setup(
      [
        "--ckan",
        `${ckan.url}/data/en`,
        "--resource",
        `a=${sample}`,
        "--resource",
        "gone=0000aaaa-1111-4222-8333-444455556666",
        "--yes",
      ],
      TOKEN,
    );
    expectFailure(run, /gone = 0000aaaa-1111-4222-8333-444455556666: not a table in .*DataStore/);
    // CKAN's sentence inside ours, without its own period before our parenthesis closes.
    expect(run.stderr).toContain('Resource "0000aaaa-1111-4222-8333-444455556666" was not found).');
  });

  it("fails on a private table without a token, and with a token CKAN refuses", async () => {
    expectFailure(
      await setup(["--ckan", `${ckan.url}/data/en`, "--resource", `secret=${PRIVATE}`, "--yes"]),
      /secret = .* is private: CKAN needs a token.*\n.*CKAN_API_TOKEN/,
    );
    expectFailure(
      await setup(["--ckan", `${ckan.url}/data/en`, "--resource", `secret=${PRIVATE}`, "--yes"], `${TOKEN}-wrong`),
      /CKAN refused the token/,
    );
  });

  it("refuses a token given as an argument, and a reference that is no resource", async () => {
    expectFailure(
      await setup(["--ckan", `${ckan.url}/data/en`, "--resource", `a=${sample}`, "--token", TOKEN, "--yes"]),
      /never an argument/,
    );
    expectFailure(
      await setup(
        ["--ckan", `${ckan.url}/data/en`, "--resource", "a=https://portal.example/dataset/x", "--yes"],
        TOKEN,
      ),
      /neither a resource id nor a resource page URL/,
    );
  });

  it("adds on a second run: the aliases given are added or updated, the others and their jobs kept, and the result printed as a table", async () => {
    const first = await setup(
      [
        "--ckan",
        `${ckan.url}/data/en`,
        "--resource",
        `grants=${sample}`,
        "--resource",
        `secret=${PRIVATE}`,
        "--snapshot",
        "grants=0 3 * * *",
        "--yes",
      ],
      TOKEN,
    );
    expect(first.code, first.stderr).toBe(0);
    const second = await setup(
      ["--ckan", `${ckan.url}/data/en`, "--resource", `big=${big}`, "--resource", `grants=${edge}`, "--yes"],
      TOKEN,
      undefined,
      first.config,
    );
    expect(second.code, second.stderr).toBe(0);
    const { vars, triggers } = experimental_readRawConfig({ config: second.config }).rawConfig;
    expect({ ...((vars as Record<string, unknown>)["RESOURCES"] as object) }).toEqual({
      grants: edge,
      secret: PRIVATE,
      big,
    });
    expect(JSON.parse(String((vars as Record<string, unknown>)["SNAPSHOT_JOBS"]))).toEqual([
      { name: "grants-snapshot", resource: "grants", formats: ["csv"], cron: "0 3 * * *", keep: 30 },
    ]);
    expect(triggers?.crons).toEqual(["0 3 * * *"]);
    // Only the tables given were asked about; the printed table shows all of them, and the jobs.
    expect(second.stdout).not.toContain(`secret = ${PRIVATE}`);
    expect(second.stdout).toMatch(new RegExp(`grants +${edge} +now this table \\(was ${sample}\\) +Edge cases`));
    expect(second.stdout).toMatch(new RegExp(`secret +${PRIVATE} +kept`));
    expect(second.stdout).toMatch(new RegExp(`big +${big} +added +Big grants`));
    expect(second.stdout).toMatch(/grants-snapshot +grants +csv +0 3 \* \* \*/);
    expect(second.stdout).toContain("(needed if a published table is private)");
  });

  it("checks the aliases it keeps against the new site when --ckan names another one", async () => {
    const french = await startEmulatorServer({ port: 0, token: TOKEN, version: "2.12", basePath: "/data/fr" });
    try {
      const first = await setup(["--ckan", `${ckan.url}/data/en`, "--resource", `grants=${sample}`, "--yes"], TOKEN);
      expect(first.code, first.stderr).toBe(0);
      const same = await setup(
        ["--ckan", `${ckan.url}/data/en`, "--resource", `big=${big}`, "--yes"],
        TOKEN,
        undefined,
        first.config,
      );
      expect(same.stdout).not.toContain(`grants = ${sample}`);
      const moved = await setup(
        ["--ckan", french.base, "--resource", `edge=${edge}`, "--yes"],
        TOKEN,
        undefined,
        first.config,
      );
      expect(moved.code, moved.stderr).toBe(0);
      expect(moved.stdout).toContain(`grants = ${sample}  Sample grants`);
      expect(moved.stdout).toContain(`big = ${big}  Big grants`);
      expect(moved.stdout).toMatch(new RegExp(`grants +${sample} +kept`));
      expect(experimental_readRawConfig({ config: moved.config }).rawConfig.vars?.["CKAN_BASE_URL"]).toBe(french.base);
    } finally {
      await french.close();
    }
  });

  it("removes only when told: --remove takes an alias away with its snapshot job; an alias it does not publish is refused by name", async () => {
    const first = await setup(
      [
        "--ckan",
        `${ckan.url}/data/en`,
        "--resource",
        `grants=${sample}`,
        "--resource",
        `big=${big}`,
        "--snapshot",
        "grants=0 3 * * *",
        "--snapshot",
        "big=0 0 1 * *",
        "--yes",
      ],
      TOKEN,
    );
    expect(first.code, first.stderr).toBe(0);
    const removed = await setup(
      ["--ckan", `${ckan.url}/data/en`, "--remove", "grants", "--yes"],
      undefined,
      undefined,
      first.config,
    );
    expect(removed.code, removed.stderr).toBe(0);
    const { vars, triggers } = experimental_readRawConfig({ config: removed.config }).rawConfig;
    expect({ ...((vars as Record<string, unknown>)["RESOURCES"] as object) }).toEqual({ big });
    expect(
      JSON.parse(String((vars as Record<string, unknown>)["SNAPSHOT_JOBS"])).map((job: { name: string }) => job.name),
    ).toEqual(["big-snapshot"]);
    expect(triggers?.crons).toEqual(["0 0 1 * *"]);
    expect(removed.stdout).toContain("no longer published: grants (and snapshot job grants-snapshot with it)");
    expectFailure(
      await setup(["--ckan", `${ckan.url}/data/en`, "--remove", "nope", "--yes"], undefined, undefined, first.config),
      /--remove nope: .* publishes no alias nope \(it publishes big\)/,
    );
    expectFailure(
      await setup(
        ["--ckan", `${ckan.url}/data/en`, "--remove", "big", "--resource", `big=${sample}`, "--yes"],
        undefined,
        undefined,
        first.config,
      ),
      /both given/,
    );
  });

  it("asks before removing, without --yes: it shows what is published and takes away only the aliases typed", async () => {
    const first = await setup(
      [
        "--ckan",
        `${ckan.url}/data/en`,
        "--resource",
        `grants=${sample}`,
        "--resource",
        `secret=${PRIVATE}`,
        "--snapshot",
        "secret=0 3 * * *",
        "--yes",
      ],
      TOKEN,
    );
    expect(first.code, first.stderr).toBe(0);
    // The token, "secret" (to remove), Enter (no table to add), y.
    const run = await setup(["--ckan", `${ckan.url}/data/en`], undefined, `${TOKEN}\nsecret\n\ny\n`, first.config);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(
      /Published now \(2\):\n {2}grants = 5bdeaf06-\S+\n {2}secret = 60686d2e-\S+ {2}\(snapshot job secret-snapshot\)/,
    );
    expect(run.stdout).toContain(
      "stop publishing secret (and snapshot job secret-snapshot with it): write CKAN_BASE_URL, RESOURCES, SNAPSHOT_JOBS and [triggers]",
    );
    const vars = experimental_readRawConfig({ config: run.config }).rawConfig.vars as Record<string, unknown>;
    expect({ ...(vars["RESOURCES"] as object) }).toEqual({ grants: sample });
    expect(JSON.parse(String(vars["SNAPSHOT_JOBS"]))).toEqual([]);
  });

  it("lists the DataStore's tables by dataset and resource name, suggests an alias from the resource name, and a free one when it is taken", async () => {
    // The token, `tables`, 1, Enter (the suggested alias), `tables`, 4, a taken alias, Enter (the
    // free one offered), Enter (done), Enter twice (no schedules), y.
    const run = await setup(
      ["--ckan", `${ckan.url}/data/en`],
      undefined,
      `${TOKEN}\ntables\n1\n\ntables\n4\nsample-grants\n\n\n\n\ny\n`,
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/1\. Demo grants \/ Sample grants {2}\(5bdeaf06-/);
    expect(run.stdout).toMatch(/3\. Private grants \/ Private grants {2}\(60686d2e-/);
    expect(run.stdout).toMatch(/4\. Demo grants \/ Edge cases {2}\(e1d9e5a7-/);
    expect(run.stdout).toContain("alias for Demo grants / Sample grants [sample-grants]");
    expect(run.stdout).toContain("sample-grants is taken: Enter takes sample-grants-2, or type another.");
    const vars = experimental_readRawConfig({ config: run.config }).rawConfig.vars as Record<string, unknown>;
    expect({ ...(vars["RESOURCES"] as object) }).toEqual({ "sample-grants": sample, "sample-grants-2": edge });
  });

  it("prints its usage for --help (exit 0), and names --help when an option is unknown", async () => {
    const help = await setup(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stderr).toBe("");
    for (const option of ["--ckan", "--resource", "--remove", "--snapshot", "--yes", "--config", "CKAN_API_TOKEN"])
      expect(help.stdout).toContain(option);
    expect(help.after).toBe(help.before);
    expectFailure(
      await setup(["--ckan", `${ckan.url}/data/en`, "--resources", `a=${sample}`]),
      /Unknown option '--resources'.*\n.*npm run setup -- --help/,
    );
  });

  it("suggests running without --yes only when --yes was given", async () => {
    expectFailure(
      await setup(["--ckan", `${ckan.url}/data/en`, "--yes"], TOKEN),
      /no table chosen: add --resource .* \(or run without --yes to search\)\.$/m,
    );
    const asked = await setup(["--ckan", `${ckan.url}/data/en`], undefined, "\n\n");
    expectFailure(asked, /no table chosen: add --resource <alias>=<resource id or resource page URL>\.$/m);
  });
});
