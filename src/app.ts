import { Router, type IRequest } from "itty-router";
import { CkanClient } from "./ckan/client.ts";
import type { UpstreamFetch } from "./ckan/types.ts";
import { configFor } from "./config.ts";
import type { Env } from "./env.ts";
import { errorResponse, HttpError, toHttpError } from "./errors.ts";
import { exportResponse, runExport } from "./export.ts";
import { isFormatName, FORMATS } from "./format/index.ts";
import { log } from "./log.ts";
import { parseExportQuery } from "./query.ts";
import { redactor } from "./secrets.ts";
import { requireAdmin } from "./snapshot/admin.ts";
import { runJob, runScheduled, type SnapshotDeps } from "./snapshot/run.ts";
import { bucketOf, findJob, listSnapshots, serveSnapshotFile } from "./snapshot/serve.ts";

export interface AppDeps {
  /** How the worker reaches CKAN: global fetch in production, the emulator or a stub in tests. */
  upstreamFetch: UpstreamFetch;
}

/** Headers every response carries: links are fetched cross-origin by dashboards. */
const COMMON_HEADERS = {
  "access-control-allow-origin": "*",
  "access-control-expose-headers": "X-Total-Count, Content-Disposition, Content-Length",
};

export function createApp(deps: AppDeps) {
  async function exportRoute(request: IRequest, env: Env): Promise<Response> {
    const format = String(request.params.format ?? "");
    if (!isFormatName(format)) {
      throw new HttpError(404, `No such export format ".${format}". Use one of: ${Object.keys(FORMATS).map((f) => `/export.${f}`).join(", ")}.`);
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      throw new HttpError(405, "Exports are read with GET (or HEAD).", { headers: { allow: "GET, HEAD" } });
    }
    const config = configFor(env);
    const query = parseExportQuery(new URL(request.url).searchParams, format, config);
    const client = new CkanClient(config, deps.upstreamFetch);
    const started = Date.now();
    const run = await runExport(query, config, client, (outcome) =>
      log({
        event: "export",
        route: `/export.${format}`,
        resource: query.alias ?? query.resourceId,
        status: outcome.error?.status ?? 200,
        rows: outcome.rows,
        bytes: outcome.bytes,
        pages: client.stats.requests,
        upstream_ms: client.stats.milliseconds,
        ms: Date.now() - started,
        ...(outcome.error ? { error: outcome.error.message } : {}),
      }, redactor(env)),
    );
    return exportResponse(run, config.bufferBytes, request.method === "HEAD");
  }

  const snapshotDeps = (env: Env): SnapshotDeps => ({
    bucket: bucketOf(env.SNAPSHOTS),
    config: configFor(env),
    upstreamFetch: deps.upstreamFetch,
    redact: redactor(env),
  });

  async function runNow(request: IRequest, env: Env): Promise<Response> {
    const config = configFor(env);
    await requireAdmin(request as unknown as Request, config);
    const job = findJob(config, String(request.params.name));
    // Whole seconds: a stamp has no milliseconds, and two clicks in one second are one run.
    const result = await runJob(job, Math.floor(Date.now() / 1000) * 1000, snapshotDeps(env));
    return Response.json(result, { status: result.status === "ok" ? 200 : 502 });
  }

  const router = Router<IRequest, [Env, ExecutionContext]>({
    catch: (error: unknown, request: IRequest, env: Env) => {
      const httpError = toHttpError(error);
      const redact = redactor(env);
      if (httpError.status >= 500) {
        log({ event: "error", route: new URL(request.url).pathname, status: httpError.status, message: httpError.message, cause: String(httpError.cause ?? "") }, redact);
      }
      return errorResponse(httpError, redact);
    },
    finally: [
      (response: Response) => {
        for (const [name, value] of Object.entries(COMMON_HEADERS)) response.headers.set(name, value);
        return response;
      },
    ],
  });

  router.all("/export.:format", exportRoute);
  router.get("/snapshots", (request: IRequest, env: Env) =>
    listSnapshots(configFor(env), bucketOf(env.SNAPSHOTS), new URL(request.url).origin),
  );
  router.post("/snapshots/:name/run", runNow);
  router.all("/snapshots/:name/:file", (request: IRequest, env: Env) =>
    serveSnapshotFile(request, configFor(env), bucketOf(env.SNAPSHOTS)),
  );
  router.get("/", (request: IRequest) => Response.json(indexBody(new URL(request.url).origin)));
  router.all("*", () => {
    throw new HttpError(404, "Not found. Exports live at /export.csv, /export.json, /export.ndjson and /export.tsv; snapshots at /snapshots.");
  });

  return {
    fetch: (request: Request, env: Env, ctx: ExecutionContext): Promise<Response> => router.fetch(request, env, ctx),
    /** The cron trigger: runs the jobs for this expression. Never throws; failures are in R2 and the logs. */
    async scheduled(cron: string, scheduledTime: number, env: Env) {
      try {
        return await runScheduled(cron, scheduledTime, snapshotDeps(env));
      } catch (error) {
        log({ event: "scheduled", status: "failed", error: toHttpError(error).message }, redactor(env));
        return [];
      }
    },
  };
}

function indexBody(origin: string) {
  return {
    service: "Datastore Export",
    exports: Object.keys(FORMATS).map((f) => `${origin}/export.${f}?resource=<alias>|resource_id=<uuid>`),
    example: `${origin}/export.csv?resource=sample&limit=100`,
    docs: "See README.md for every parameter.",
  };
}
