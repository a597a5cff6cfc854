import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { configDefaults, defineConfig } from "vitest/config";

// Two projects, both run by `vitest run` (npm test):
// - workers: every spec inside workerd through @cloudflare/vitest-plugin (the plugin belongs to
//   this project only: it turns its project's pool into workerd);
// - browser: specs in Node that start `wrangler dev` and drive Debian's Chromium (test/browser).
export default defineConfig({
  test: {
    projects: [
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
          }),
        ],
        test: {
          name: "workers",
          include: ["test/**/*.test.ts", "src/**/*.test.ts"],
          exclude: [...configDefaults.exclude, "test/browser/**"],
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: "browser",
          include: ["test/browser/**/*.test.{ts,mts}"],
          environment: "node",
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
