import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { configDefaults, defineConfig } from "vitest/config";

// Two projects, both run by `vitest run` (npm test):
// - workers: every spec inside workerd through @cloudflare/vitest-plugin (the plugin belongs to
//   this project only: it turns its project's pool into workerd);
// - node: specs in Node: the shape of the code (test/node), specs that start `wrangler dev` and
//   read its answers on the wire (test/http) or drive a real browser (test/browser).
// Quiet when green: what a test prints (request log lines, mostly) is shown only when it fails.
export default defineConfig({
  test: {
    silent: "passed-only",
    // Only a test slower than this is listed under its file: a green run stays on one screen.
    slowTestThreshold: 10_000,
    projects: [
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            // src/index.ts, its snapshot Workflow wired to the harness (see test/worker.ts).
            main: "./test/worker.ts",
          }),
        ],
        test: {
          name: "workers",
          include: ["test/**/*.test.ts", "src/**/*.test.ts"],
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
