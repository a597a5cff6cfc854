import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import type { Env } from "../config/env.ts";
import type { JobResult } from "./run.ts";
import { runSnapshot, type RunDeps, type RunParams } from "./workflow.ts";

// The one module that needs the Workers runtime's own classes: what routes and specs read of runs
// (workflow.ts, runs.ts) loads anywhere, Node included.

/** The Workflow class (wrangler.toml `[[workflows]] class_name`), its deps made from its env. */
export function snapshotRunClass(depsOf: (env: Env) => RunDeps) {
  return class SnapshotRun extends WorkflowEntrypoint<Env, RunParams> {
    override async run(event: Readonly<WorkflowEvent<RunParams>>, step: WorkflowStep): Promise<JobResult> {
      return runSnapshot(event.payload, event.instanceId, step, depsOf(this.env));
    }
  };
}
