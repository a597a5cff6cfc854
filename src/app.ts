import { Router, type IRequest } from "itty-router";
import type { UpstreamFetch } from "./ckan/types.ts";
import { configFor, type Config } from "./config/config.ts";
import type { Env } from "./config/env.ts";
import { errorResponse, HttpError, toHttpError } from "./errors.ts";
import { withColumnHint } from "./discovery/column-hint.ts";
import { cachedJson } from "./discovery/cached-json.ts";
import { indexRoute } from "./discovery/index-page.ts";
import { openApiDocument } from "./discovery/openapi.ts";
import { describeResource, listResources, type DiscoveryDeps } from "./discovery/resources.ts";
import { signLinkRoute } from "./discovery/signed-links.ts";
import { parameterAnchor, parameterEntry } from "./query/params.ts";
import { wantsFresh } from "./http/edge-cache.ts";
import { exportRoute } from "./http/export-route.ts";
import { inlineErrorResponse, wantsInlineError } from "./http/inline-error.ts";
import { logRequest, requestInfo } from "./http/request-log.ts";
import { log } from "./log/log.ts";
import { redactor } from "./log/redact.ts";
import { corsHeaders, preflight } from "./security/cors.ts";
import { requireSignedLink } from "./security/links.ts";
import { enforceRateLimit } from "./security/rate-limit.ts";
import { signedPath } from "./security/signature.ts";
import { requireAdmin } from "./security/admin.ts";
import { runJob, runScheduled, type SnapshotDeps } from "./snapshot/run.ts";
import { bucketOf, findJob, listSnapshots, serveSnapshotFile } from "./snapshot/serve.ts";

export interface AppDeps {
  /** How the worker reaches CKAN: global fetch in production, the emulator or a stub in tests. */
  upstreamFetch: UpstreamFetch;
}

/** A URL longer than this is refused before anything else reads it. */
export const MAX_URL_LENGTH = 8192;

/** Links to hand out: signed, expiring after SNAPSHOT_LINK_TTL_SECONDS, when the worker only honours signed links. */
const linkMaker = (config: Config, origin: string) => async (path: string): Promise<string> =>
  origin +
  (config.linkSigningKey === undefined
    ? path
    : await signedPath(config.linkSigningKey, path, Math.floor(Date.now() / 1000) + config.snapshotLinkTtlSeconds));

export function createApp(deps: AppDeps) {
  const snapshotDeps = (env: Env): SnapshotDeps => ({
    bucket: bucketOf(env.SNAPSHOTS),
    config: configFor(env),
    upstreamFetch: deps.upstreamFetch,
    redact: redactor(env),
  });

  /** Links (exports and snapshot files): signature, then rate limit (a verified sig is a key), before any work. */
  async function guardLink(request: IRequest, env: Env): Promise<Config> {
    const config = configFor(env);
    await requireSignedLink(new URL(request.url), config);
    await enforceRateLimit(request as unknown as Request, env, config);
    return config;
  }

  /** Discovery: with signing on it would reveal what exists, so it is for operators; rate-limited like links. */
  async function guardDiscovery(request: IRequest, env: Env): Promise<DiscoveryDeps> {
    const config = configFor(env);
    if (config.linkSigningKey !== undefined) await requireAdmin(request as unknown as Request, config);
    await enforceRateLimit(request as unknown as Request, env, config);
    const origin = new URL(request.url).origin;
    return { config, upstreamFetch: deps.upstreamFetch, origin, link: linkMaker(config, origin) };
  }

  const router = Router<IRequest, [Env, ExecutionContext]>({
    before: [
      (request: IRequest) => {
        requestInfo(request);
        if (request.url.length > MAX_URL_LENGTH) {
          throw new HttpError(400, `The link is ${request.url.length} characters long; the most this worker accepts is ${MAX_URL_LENGTH}.`, {
            parameter: "url",
          });
        }
      },
    ],
    catch: (error: unknown, request: IRequest, env: Env) => {
      const httpError = toHttpError(error);
      const redact = redactor(env);
      if (httpError.status >= 500 && httpError.cause !== undefined) {
        log({ event: "error", id: requestInfo(request).id, message: httpError.message, cause: String(httpError.cause) }, redact);
      }
      const entry = httpError.status === 400 && httpError.parameter !== undefined ? parameterEntry(httpError.parameter) : undefined;
      return errorResponse(httpError, redact, entry && `${new URL(request.url).origin}/#${parameterAnchor(entry)}`);
    },
    finally: [
      (response: Response, request: IRequest, env: Env) => {
        let config: Config | undefined;
        try {
          config = configFor(env);
        } catch {
          config = undefined;
        }
        for (const [name, value] of Object.entries(corsHeaders(request as unknown as Request, config))) response.headers.set(name, value);
        response.headers.set("x-request-id", requestInfo(request).id);
        logRequest(request as unknown as Request, response.status, redactor(env));
        return response;
      },
    ],
  });

  router.options("*", (request: IRequest) => preflight(request as unknown as Request));
  router.all("/export.:format", async (request: IRequest, env: Env, ctx: ExecutionContext) => {
    const format = String(request.params.format ?? "");
    const url = new URL(request.url);
    try {
      const config = await guardLink(request, env);
      return await exportRoute(request as unknown as Request, format, {
        config,
        upstreamFetch: deps.upstreamFetch,
        info: requestInfo(request),
        waitUntil: (promise) => ctx.waitUntil(promise),
      }).catch((error: unknown) => withColumnHint(error, url, format, config, deps.upstreamFetch));
    } catch (error) {
      // A spreadsheet that shows no error body gets the message as its one cell (errors=inline).
      if (!wantsInlineError(request.method, url, format, request.headers.get("user-agent"))) throw error;
      log({ event: "error", id: requestInfo(request).id, message: toHttpError(error).message, inline: true }, redactor(env));
      return inlineErrorResponse(error, format, redactor(env));
    }
  });
  router.get("/resources", async (request: IRequest, env: Env) => {
    const discovery = await guardDiscovery(request, env);
    return cachedJson(new URL(request.url), discovery.config, () => listResources(discovery), wantsFresh(request as unknown as Request));
  });
  router.get("/resources/:alias", async (request: IRequest, env: Env) => {
    const discovery = await guardDiscovery(request, env);
    let alias: string;
    try {
      alias = decodeURIComponent(String(request.params.alias));
    } catch {
      throw new HttpError(404, "No resource has that name: the name in the link is not valid URL encoding.", { parameter: "resource" });
    }
    return cachedJson(new URL(request.url), discovery.config, () => describeResource(alias, discovery), wantsFresh(request as unknown as Request));
  });
  router.get("/openapi.json", async (request: IRequest, env: Env) => {
    await enforceRateLimit(request as unknown as Request, env, configFor(env));
    return Response.json(openApiDocument(new URL(request.url).origin), { headers: { "cache-control": "public, max-age=300" } });
  });
  router.post("/links", async (request: IRequest, env: Env) => {
    const config = configFor(env);
    await requireAdmin(request as unknown as Request, config);
    return signLinkRoute(request as unknown as Request, config);
  });
  router.get("/snapshots", async (request: IRequest, env: Env) => {
    const config = configFor(env);
    // With signing on, the listing hands out signed links: it is for operators only.
    if (config.linkSigningKey !== undefined) await requireAdmin(request as unknown as Request, config);
    return listSnapshots(config, bucketOf(env.SNAPSHOTS), linkMaker(config, new URL(request.url).origin));
  });
  router.post("/snapshots/:name/run", async (request: IRequest, env: Env) => {
    const config = configFor(env);
    await requireAdmin(request as unknown as Request, config);
    const job = findJob(config, String(request.params.name));
    // Whole seconds: a stamp has no milliseconds, and two clicks in one second are one run.
    const result = await runJob(job, Math.floor(Date.now() / 1000) * 1000, snapshotDeps(env));
    return Response.json(result, { status: result.status === "ok" ? 200 : 502 });
  });
  router.all("/snapshots/:name/:file", async (request: IRequest, env: Env) =>
    serveSnapshotFile(request, await guardLink(request, env), bucketOf(env.SNAPSHOTS)),
  );
  router.get("/", (request: IRequest, env: Env) => indexRoute(request as unknown as Request, env));
  router.all("*", () => {
    throw new HttpError(404, "Not found. Exports live at /export.csv, /export.json, /export.ndjson and /export.tsv; what they can read at /resources; snapshots at /snapshots; every route in /openapi.json.");
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
