// `npm start`: the CKAN emulator on loopback plus the worker in `wrangler dev`, fully offline.
// Prints links that work as soon as the worker is up.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startEmulatorServer } from "../emulator/server.ts";
import { OFFLINE_WRANGLER } from "./offline.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const emulatorPort = Number(process.env.EMULATOR_PORT ?? 8788);
const workerPort = Number(process.env.PORT ?? 8787);
const token = process.env.EMULATOR_TOKEN ?? "demo-token";

const emulator = await startEmulatorServer({ port: emulatorPort, token });
const base = `${emulator.url}/data/en`;
console.log(`CKAN emulator: ${base}/api/action/datastore_search (100,000-row "sample", 1,000,000-row "big", token-only "private", every-edge-case "edge")`);

// The demo's own configuration (the emulator's resources and snapshot jobs); wrangler.toml is the
// operator's. Wrangler would look for .dev.vars beside demo/wrangler.toml: the developer's local
// settings (a LINK_SIGNING_KEY to try signed links) are in the project's root .dev.vars, named here.
const localSettings = join(ROOT, ".dev.vars");
// wrangler's own script under this Node (npx would add npm's chatter and its own Node lookup).
const wranglerBin = join(dirname(createRequire(import.meta.url).resolve("wrangler/package.json")), "bin", "wrangler.js");
const wrangler = spawn(
  process.execPath,
  [
    wranglerBin, "dev",
    "--config", join(ROOT, "demo", "wrangler.toml"),
    ...(existsSync(localSettings) ? ["--env-file", localSettings] : []),
    "--ip", "127.0.0.1",
    "--port", String(workerPort),
    "--var", `CKAN_BASE_URL:${base}`,
    "--var", `CKAN_API_TOKEN:${token}`,
    "--test-scheduled",
    ...process.argv.slice(2),
  ],
  { stdio: ["inherit", "pipe", "inherit"], env: { ...process.env, ...OFFLINE_WRANGLER } },
);

const origin = `http://127.0.0.1:${workerPort}`;
let announced = false;
wrangler.stdout.on("data", (data: Buffer) => {
  process.stdout.write(data);
  if (announced || !/Ready on/i.test(data.toString())) return;
  announced = true;
  console.log(`
Open ${origin}/ in a browser to build a link (columns, filters, preview, what to paste where).

Try these links (paste a CSV one into Google Sheets as =IMPORTDATA("...") once deployed):
  ${origin}/export.csv?resource=sample&limit=100
  ${origin}/export.csv?resource=sample&q=glacier&fields=id,name,amount&sort=amount%20desc&limit=20
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
