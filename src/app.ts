import { Router } from "itty-router";
import { configFor } from "./config/config.ts";
import type { Env } from "./config/env.ts";
import { toHttpError } from "./errors.ts";
import type { RequestInfo } from "./http/request-log.ts";
import { log } from "./log/log.ts";
import { redactor } from "./log/redact.ts";
import { preflight } from "./security/cors.ts";
import { runScheduled } from "./snapshot/procedure.ts";
import { startScheduled } from "./snapshot/runs.ts";
import type { Runs } from "./snapshot/workflow.ts";
import { answer, noRoute } from "./routes/middleware.ts";
import { serveRoute } from "./routes/pipeline.ts";
import type { AppDeps, RoutedRequest } from "./routes/route.ts";
import { snapshotDeps } from "./routes/snapshots.ts";
import { ROUTES } from "./routes/table.ts";

export type { AppDeps } from "./routes/route.ts";

export function createApp(deps: AppDeps) {
  // Matching only: admission, errors and the log line are middleware.ts's `answer`, around it.
  const router = Router<RoutedRequest, [Env, ExecutionContext, RequestInfo]>();
  router.options("*", preflight);
  for (const route of ROUTES) {
    for (const method of route.methods) {
      router[method.toLowerCase() as "get" | "head" | "post" | "delete"](route.path, (request, env, ctx, info) =>
        serveRoute(route, {
          request,
          url: new URL(request.url),
          env,
          config: configFor(env),
          deps,
          info,
          waitUntil: (promise) => ctx.waitUntil(promise),
          routes: ROUTES,
        }),
      );
    }
  }
  router.all("*", (request) => noRoute(request, ROUTES));

  return {
    fetch: (request: Request, env: Env, ctx: ExecutionContext): Promise<Response> =>
      answer(request as RoutedRequest, env, (info) => router.fetch(request as RoutedRequest, env, ctx, info)),
    /** The cron trigger: runs the jobs for this expression. Never throws; failures are in R2 and the logs. */
    async scheduled(cron: string, scheduledTime: number, env: Env) {
      try {
        const config = configFor(env);
        // With the Workflow bound, the cron only starts runs (one instance per job and time); else it runs them.
        if (env.SNAPSHOT_RUNS !== undefined)
          return await startScheduled(
            cron,
            scheduledTime,
            { config, redact: redactor(env) },
            env.SNAPSHOT_RUNS as Runs,
          );
        return await runScheduled(cron, scheduledTime, snapshotDeps({ env, config, deps }));
      } catch (error) {
        log({ event: "scheduled", status: "failed", error: toHttpError(error).message }, redactor(env));
        return [];
      }
    },
  };
}
