import { existsSync } from "node:fs";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { configDefaults, defineConfig } from "vitest/config";

// The specs run the demo's configuration (demo/wrangler.toml), never the operator's wrangler.toml.
// Wrangler adds to the worker's env the .dev.vars found beside the config it reads (else .env, and
// with CLOUDFLARE_INCLUDE_PROCESS_ENV every variable of the shell), and the vitest plugin cannot be
// told otherwise: the demo folder holds no .dev.vars, and .env loading is off for this process and the
// `wrangler dev` it starts, so a developer's local settings (a LINK_SIGNING_KEY in the root .dev.vars)
// never change what a spec sees. The wire specs' `wrangler dev` also gets an empty --env-file
// (test/http/harness.mts).
const DEMO_CONFIG = "./demo/wrangler.toml";
if (existsSync(new URL("./demo/.dev.vars", import.meta.url))) {
  throw new Error("demo/.dev.vars would reach the specs' worker: keep local settings in the project's root .dev.vars");
}
process.env["CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV"] = "false";

export default defineConfig({
  test: {
    silent: "passed-only",
    // A dot per test: a green run (600 specs in 49 files) stays on one screen, and a failure still
    // prints its file, name, diff and what the test logged. CI asks for the default reporter too.
    reporters: ["dot"],
    slowTestThreshold: 10_000,
    projects: [
      {
        plugins: [
          cloudflareTest({
            // workerd's INFO log, which the pool turns on by default, prints every rejection that
            // crosses an RPC boundary, even one the caller handles: a snapshot run that fails for good
            // must reject its Workflow run() (the only way its instance ends as errored), and the engine
            // catches it, yet each printed `uncaught exception; source = Uncaught (in promise)`.
            // Warnings and errors still print; a spec's own console output is vitest's.
            verbose: false,
            wrangler: { configPath: DEMO_CONFIG },
            // src/index.ts, its snapshot Workflow wired to the harness (see test/worker.ts).
            main: "./test/worker.ts",
          }),
        ],
        test: {
          name: "workers",
          include: ["test/**/*.test.ts", "src/**/*.test.ts"],
          // The emulator's PostgreSQL for datastore_search_sql, served from Node (PGlite cannot run in workerd).
          globalSetup: ["./test/http/sql-engine-server.mts"],
          exclude: [...configDefaults.exclude, "test/browser/**", "test/http/**", "test/node/**"],
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: "node",
          include: ["test/browser/**/*.test.{ts,mts}", "test/http/**/*.test.{ts,mts}", "test/node/**/*.test.ts"],
          environment: "node",
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
