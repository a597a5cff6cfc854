import type { WorkflowStep, WorkflowStepConfig } from "cloudflare:workers";
import type { UpstreamFetch } from "../ckan/types.ts";
import { configFor } from "../config/config.ts";
import type { Env } from "../config/env.ts";
import { bindingError, PermanentFailure } from "../errors.ts";
import { redactor } from "../log/redact.ts";
import { RunCancelled, StepFailed } from "./errors.ts";
import type { RunDeps, RunParams, StepRunner } from "./procedure.ts";

export type Runs = Workflow<RunParams>;

/** One instance per job and scheduled time: creating it twice fails, so a run starts once. */
export const instanceId = (job: string, stamp: string): string => `${job}-${stamp}`;

/** Tries of a step: the first and eight more. */
const TRIES = 9;
/** Seconds before the second try; each wait after doubles (about two hours in all). */
const FIRST_WAIT_SECONDS = 30;
/** One try a step: a failed try is a result, and the wait before the next is a durable sleep. */
const ONCE: WorkflowStepConfig = { retries: { limit: 0, delay: 0 }, timeout: "15 minutes" };

/** A try's outcome as the step stores it. */
type Outcome<T> = { ok: true; value: T } | { ok: false; failure: "retry" | "permanent" | "cancelled"; message: string };

/**
 * The Workflow's runner: each step tried up to TRIES times, 30 s after the first failure, then twice
 * as long each time, so an outage of CKAN (or R2) is waited out. A failed try comes back as the
 * step's result instead of an exception thrown into the engine (which the runtime reports as an
 * uncaught error every time), and the wait is `step.sleep`: durable, and visible to the Workflow's
 * own tooling. A PermanentFailure is not tried again; a RunCancelled ends the run. Results are JSON text: a step result must be
 * serialisable, which the types of most results cannot prove.
 */
export function workflowRunner(step: WorkflowStep): StepRunner {
  return {
    async step<T>(name: string, work: (tried: number) => Promise<T>): Promise<T> {
      for (let tried = 1; ; tried++) {
        const text = await step.do(tried === 1 ? name : `${name} (try ${tried})`, ONCE, async () => {
          let outcome: Outcome<T>;
          try {
            outcome = { ok: true, value: await work(tried) };
          } catch (error) {
            const failure =
              error instanceof RunCancelled ? "cancelled" : error instanceof PermanentFailure ? "permanent" : "retry";
            outcome = { ok: false, failure, message: error instanceof Error ? error.message : String(error) };
          }
          return JSON.stringify(outcome);
        });
        const outcome = JSON.parse(text) as Outcome<T>;
        if (outcome.ok) return outcome.value;
        if (outcome.failure === "cancelled") throw new RunCancelled();
        if (outcome.failure === "permanent" || tried === TRIES) throw new StepFailed(outcome.message);
        await step.sleep(`${name} (wait ${tried})`, `${FIRST_WAIT_SECONDS * 2 ** (tried - 1)} seconds`);
      }
    },
  };
}

/** Statuses of an instance that will write no more; "gone": the Workflow no longer knows the id. */
const ENDED: ReadonlySet<string> = new Set(["errored", "terminated", "complete", "gone"]);
export const hasEnded = (status: string): boolean => ENDED.has(status);

/**
 * A Workflow instance's status; "gone" for an id the Workflow no longer knows (past its retention,
 * or an inline run's), "unknown" when it does not answer within a few seconds (a busy instance may
 * be slow to: never mistaken for one that ended).
 */
export async function statusOf(runs: Runs, instance: string): Promise<string> {
  const asked = (async () => {
    let handle: WorkflowInstance;
    try {
      handle = await runs.get(instance);
    } catch {
      return "gone";
    }
    return (await handle.status()).status as string;
  })().catch(() => "unknown");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<string>((resolve) => (timer = setTimeout(resolve, 3000, "unknown")));
  try {
    return await Promise.race([asked, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether a Workflow instance may still write: one that cannot be told ended is taken as alive. */
export const isAlive = async (runs: Runs, instance: string): Promise<boolean> =>
  !hasEnded(await statusOf(runs, instance));

/** The snapshot deps of a deployed worker with the Workflow bound: its bindings and settings, CKAN over `upstreamFetch`. */
export function runDeps(env: Env, upstreamFetch: UpstreamFetch): RunDeps & { runs: Runs } {
  if (env.SNAPSHOTS === undefined) throw bindingError("SNAPSHOTS", "the R2 bucket", "[[r2_buckets]]");
  if (env.SNAPSHOT_RUNS === undefined) throw bindingError("SNAPSHOT_RUNS", "the Workflow", "[[workflows]]");
  const runs = env.SNAPSHOT_RUNS as Runs;
  return {
    bucket: env.SNAPSHOTS,
    config: configFor(env),
    upstreamFetch,
    redact: redactor(env),
    runs,
    isAlive: (held) => isAlive(runs, held.instance),
  };
}
