import type { UpstreamFetch } from "../src/ckan/types.ts";
import type { Env } from "../src/config/env.ts";

/**
 * The worker a Workflow instance runs as in the specs: the harness made last (a file's tests run one
 * at a time), so a run reads the same emulator, faults and settings as the requests beside it.
 */
let active: { env: Env; upstreamFetch: UpstreamFetch } | undefined;

export function setActiveWorker(worker: { env: Env; upstreamFetch: UpstreamFetch }): void {
  active = worker;
}

export function activeWorker(): { env: Env; upstreamFetch: UpstreamFetch } {
  if (active === undefined) throw new Error("no harness made yet: a Workflow ran before any test set one up");
  return active;
}
