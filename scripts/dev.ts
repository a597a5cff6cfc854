// `npm run dev`: your own configuration (wrangler.toml, and the project's .dev.vars for the token) in
// `wrangler dev`, beside the demo `npm start` runs: on a port of its own (8789; the demo has 8787
// and its emulator 8788), with the cron triggers testable at /__scheduled, its address printed
// once it is up.
//   npm run dev -- [--port 8789] [any other wrangler dev option, e.g. --var CKAN_BASE_URL:https://portal.example/data/en]
// Env: PORT (the switch wins).
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { OFFLINE_WRANGLER } from "./offline.ts";
import { ensurePortFree, portNumber, takeSwitches } from "./switches.ts";

function fail(message: string): never {
  console.error(`npm run dev: ${message}`);
  process.exit(2);
}

const { values, rest } = takeSwitches(process.argv.slice(2), ["port"], fail);
const port = portNumber(
  values.get("port") ?? process.env["PORT"] ?? "8789",
  values.has("port") ? "--port" : "PORT",
  fail,
);
await ensurePortFree(port, "the worker's port", fail);

const wranglerBin = join(
  dirname(createRequire(import.meta.url).resolve("wrangler/package.json")),
  "bin",
  "wrangler.js",
);
const wrangler = spawn(
  process.execPath,
  [wranglerBin, "dev", "--ip", "127.0.0.1", "--port", String(port), "--test-scheduled", ...rest],
  {
    stdio: ["inherit", "pipe", "inherit"],
    env: { ...process.env, ...OFFLINE_WRANGLER },
  },
);

// The crons to try are the config's own (the one wrangler dev reads: --config, else wrangler.toml).
const at = rest.findIndex((arg) => arg === "--config" || arg === "-c" || arg.startsWith("--config="));
const config =
  at < 0
    ? "wrangler.toml"
    : rest[at]!.includes("=")
      ? rest[at]!.slice(rest[at]!.indexOf("=") + 1)
      : (rest[at + 1] ?? "wrangler.toml");
let crons: string[] = [];
try {
  const { experimental_readRawConfig } = await import("wrangler");
  crons = experimental_readRawConfig({ config }).rawConfig.triggers?.crons ?? [];
} catch {
  // wrangler itself will say what is wrong with the file.
}
const origin = `http://127.0.0.1:${port}`;
const scheduled =
  crons.length === 0
    ? `  (no [triggers] crons in ${config} yet: npm run setup -- --snapshot <alias>=<cron> adds a job and its cron)`
    : crons
        .map(
          (cron) =>
            `  curl "${origin}/__scheduled?cron=${encodeURIComponent(cron).replaceAll("%20", "+")}"   (runs the snapshot jobs of ${cron})`,
        )
        .join("\n");
let announced = false;
wrangler.stdout.on("data", (data: Buffer) => {
  process.stdout.write(data);
  if (announced || !/Ready on/i.test(data.toString())) return;
  announced = true;
  console.log(`
Your worker (${config}) on ${origin}:
  curl ${origin}/health
${scheduled}
`);
});

wrangler.on("exit", (code) => process.exit(code ?? 0));
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => wrangler.kill(signal));
