import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

// The specs' worker gets what demo/wrangler.toml declares and nothing a developer keeps locally
// (vitest.config.ts: the demo folder holds no .dev.vars, .env loading is off). A LINK_SIGNING_KEY
// in the project's .dev.vars (the README's signing step) must not turn every spec's link into a 403.

describe("the specs' worker environment", () => {
  it("holds the demo config's bindings and vars, and nothing else", () => {
    // The pool adds its own __VITEST_POOL_WORKERS_* bindings.
    expect(
      Object.keys(env)
        .filter((name) => !name.startsWith("__VITEST_POOL_WORKERS_"))
        .sort(),
    ).toEqual([
      "ASSETS",
      "CKAN_BASE_URL",
      "MAX_ROWS",
      "RATE_LIMITER",
      "RESOURCES",
      "SNAPSHOTS",
      "SNAPSHOT_JOBS",
      "SNAPSHOT_RUNS",
    ]);
    expect((env as { CKAN_BASE_URL?: string }).CKAN_BASE_URL).toBe("http://127.0.0.1:8788/data/en");
  });
});
