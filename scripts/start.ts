// `npm start`: the CKAN emulator on loopback plus the worker in `wrangler dev`, fully offline.
// Prints links that work as soon as the worker is up.
//   npm start -- [--port 8787] [--emulator-port 8788] [--ckan 2.12] [--sql on|off] [any other wrangler dev option]
// Env: PORT, EMULATOR_PORT, EMULATOR_CKAN_VERSION, EMULATOR_SQL, EMULATOR_TOKEN (the switches win over the env).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CKAN_VERSIONS, type CkanVersion } from "../emulator/index.ts";
import { parseSqlSwitch, startEmulatorServer } from "../emulator/server.ts";
import { OFFLINE_WRANGLER } from "./offline.ts";
import { ensurePortFree, portNumber, takeSwitches } from "./switches.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

function fail(message: string): never {
  console.error(`npm start: ${message}`);
  process.exit(2);
}

function ckanVersion(value: string, what: string): CkanVersion {
  const version = CKAN_VERSIONS.find((v) => v === value);
  if (version === undefined) fail(`${what} must be one of ${CKAN_VERSIONS.join(", ")}, not "${value}"`);
  return version;
}

const { values, rest } = takeSwitches(process.argv.slice(2), ["port", "emulator-port", "ckan", "sql"], fail);
const port = (value: string, what: string): number => portNumber(value, what, fail);
const workerPort = port(values.get("port") ?? process.env["PORT"] ?? "8787", values.has("port") ? "--port" : "PORT");
const emulatorPort = port(
  values.get("emulator-port") ?? process.env["EMULATOR_PORT"] ?? "8788",
  values.has("emulator-port") ? "--emulator-port" : "EMULATOR_PORT",
);
const version = ckanVersion(
  values.get("ckan") ?? process.env["EMULATOR_CKAN_VERSION"] ?? "2.12",
  values.has("ckan") ? "--ckan" : "EMULATOR_CKAN_VERSION",
);
const token = process.env["EMULATOR_TOKEN"] ?? "demo-token";
await ensurePortFree(workerPort, "the worker's port", fail);
// datastore_search_sql: off by default, as CKAN has it since 2.10; on, a real PostgreSQL (PGlite) answers.
const sqlWhat = values.has("sql") ? "--sql" : "EMULATOR_SQL";
let sql = false;
try {
  sql = parseSqlSwitch(values.get("sql") ?? process.env["EMULATOR_SQL"], sqlWhat);
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
}

const emulator = await startEmulatorServer({ port: emulatorPort, token, version, sql }).catch((error: unknown) =>
  fail(
    `the CKAN emulator cannot listen on 127.0.0.1:${emulatorPort} (${error instanceof Error ? error.message : String(error)}): try --emulator-port`,
  ),
);
const base = emulator.base;
console.log(
  `CKAN emulator (answering as CKAN ${version}): ${base}/api/action/datastore_search (100,000-row "sample", 1,000,000-row "big", token-only "private", every-edge-case "edge")`,
);
console.log(
  `datastore_search_sql: ${sql ? "on (PGlite, a table loaded the first time a statement names it)" : "off (npm start -- --sql on to turn it on)"}`,
);

// The demo's own configuration (the emulator's resources and snapshot jobs); wrangler.toml is the
// operator's. Wrangler would look for .dev.vars beside demo/wrangler.toml: the developer's local
// settings (a LINK_SIGNING_KEY to try signed links) are in the project's root .dev.vars, named here
// unless the command line names its own --env-file.
const localSettings = join(ROOT, ".dev.vars");
const ownEnvFile = rest.some((arg) => arg === "--env-file" || arg.startsWith("--env-file="));
// wrangler's own script under this Node (npx would add npm's chatter and its own Node lookup).
const wranglerBin = join(
  dirname(createRequire(import.meta.url).resolve("wrangler/package.json")),
  "bin",
  "wrangler.js",
);
const wrangler = spawn(
  process.execPath,
  [
    wranglerBin,
    "dev",
    "--config",
    join(ROOT, "demo", "wrangler.toml"),
    ...(existsSync(localSettings) && !ownEnvFile ? ["--env-file", localSettings] : []),
    "--ip",
    "127.0.0.1",
    "--port",
    String(workerPort),
    "--var",
    `CKAN_BASE_URL:${base}`,
    "--var",
    `CKAN_API_TOKEN:${token}`,
    "--test-scheduled",
    ...rest,
  ],
  { stdio: ["inherit", "pipe", "inherit"], env: { ...process.env, ...OFFLINE_WRANGLER } },
);

const origin = `http://127.0.0.1:${workerPort}`;
// CKAN sorts nulls first in a descending sort and takes no NULLS LAST, so the 20 largest amounts of
// a plain `desc` sort would be 20 nulls: the worker's `nulls last` moves them after the values.
const largest = "sort=amount%20desc%20nulls%20last";
let announced = false;
wrangler.stdout.on("data", (data: Buffer) => {
  process.stdout.write(data);
  if (announced || !/Ready on/i.test(data.toString())) return;
  announced = true;
  console.log(`
Open ${origin}/ in a browser to build a link (columns, filters, preview, what to paste where).

Try these links (paste a CSV one into Google Sheets as =IMPORTDATA("...") once deployed):
  ${origin}/export.csv?resource=sample&limit=100
  ${origin}/export.csv?resource=sample&q=glacier&fields=id,name,amount&${largest}&limit=20
  ${origin}/export.csv?resource=sample&fields=id,amount,category&header=label&limit=5   (data dictionary labels)
  ${origin}/export.json?resource=sample&filter.category=alpha&filter.category=beta&limit=5
  ${origin}/export.ndjson?resource=sample&limit=3
  ${origin}/export.csv?resource=sample&limit=10&bom=1&delimiter=%3B
  ${origin}/export.csv?resource=private&limit=5          (needs the token, which stays in the worker)
  ${origin}/export.csv?resource=big&limit=1000000         (a million rows, streamed)
  ${origin}/export.xlsx?resource=sample&limit=1000        (an Excel workbook, typed cells)
  ${origin}/export.json?resource=edge&limit=5             (every value exactly as CKAN wrote it)
`);
});

const stop = async (code: number): Promise<void> => {
  wrangler.kill("SIGTERM");
  await emulator.close();
  process.exit(code);
};
wrangler.on("exit", (code) => void stop(code ?? 0));
process.on("SIGINT", () => void stop(0));
process.on("SIGTERM", () => void stop(0));
