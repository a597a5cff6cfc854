import { createApp } from "./app.ts";
import type { Env } from "./config/env.ts";
import { runDeps } from "./snapshot/workflow.ts";
import { snapshotRunClass } from "./snapshot/workflow-class.ts";

const upstreamFetch = (request: Request): Promise<Response> => fetch(request);
const app = createApp({ upstreamFetch });

/** Snapshot runs as a Workflow (wrangler.toml `[[workflows]]`): one instance per job and scheduled time. */
export const SnapshotRun = snapshotRunClass((env) => runDeps(env, upstreamFetch));

export default {
  fetch: app.fetch,
  scheduled: async (controller, env, ctx) => {
    ctx.waitUntil(app.scheduled(controller.cron, controller.scheduledTime, env));
  },
} satisfies ExportedHandler<Env>;
