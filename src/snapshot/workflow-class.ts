import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import type { Env } from "../config/env.ts";
import { SnapshotRunFailed } from "./errors.ts";
import { runSnapshot, type RunDeps, type RunParams, type RunResult } from "./procedure.ts";
import { workflowRunner } from "./workflow.ts";

// The one module that needs the Workers runtime's own classes: what routes and specs read of runs
// (workflow.ts, runs.ts) loads anywhere, Node included.

/** The Workflow class (wrangler.toml `[[workflows]] class_name`), its deps made from its env. */
export function snapshotRunClass(depsOf: (env: Env) => RunDeps) {
  return class SnapshotRun extends WorkflowEntrypoint<Env, RunParams> {
    override async run(event: Readonly<WorkflowEvent<RunParams>>, step: WorkflowStep): Promise<RunResult> {
      const result = await runSnapshot(event.payload, event.instanceId, workflowRunner(step), depsOf(this.env));
      // A run that failed ends its instance as errored, with the reason the manifest's last_run gives:
      // the Workflow's own tooling (dashboard, `wrangler workflows instances list --status errored`)
      // finds it. The engine catches the throw; workerd still logs it at INFO, as every rejection that
      // crosses an RPC boundary (a NonRetryableError from a step is logged four times over), which the
      // specs' pool no longer prints (vitest.config.ts, verbose: false).
      if (result.status === "failed") throw new SnapshotRunFailed(result.error ?? "the run failed");
      return result;
    }
  };
}
