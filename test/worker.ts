// The worker the Workers specs run in: src/index.ts, with the snapshot Workflow wired to the harness
// made last (its emulator and settings) instead of the deployed bindings and the network.
import { snapshotRunClass } from "../src/snapshot/workflow-class.ts";
import { runDeps } from "../src/snapshot/workflow.ts";
import { activeWorker } from "./active-worker.ts";

export { default } from "../src/index.ts";

export const SnapshotRun = snapshotRunClass(() => {
  const { env, upstreamFetch } = activeWorker();
  return runDeps(env, upstreamFetch);
});
