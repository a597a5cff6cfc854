import { redactor } from "../log/redact.ts";
import { requireAdmin } from "../security/admin.ts";
import { runJob } from "../snapshot/run.ts";
import { bucketOf, findJob, listSnapshots, serveSnapshotFile } from "../snapshot/serve.ts";
import { guardLink, guardOperatorsWhenSigning, linkMaker } from "./guards.ts";
import { ADMIN, error, errors, json, pathParameter, type Json } from "./openapi-parts.ts";
import type { Route, RouteContext } from "./route.ts";

const snapshotDeps = ({ env, config, deps }: RouteContext) => ({
  bucket: bucketOf(env.SNAPSHOTS),
  config,
  upstreamFetch: deps.upstreamFetch,
  redact: redactor(env),
});

/** GET /snapshots: the jobs and their latest files; with signing on it hands out signed links, so it is for operators. */
export const snapshotListRoute: Route = {
  methods: ["GET"],
  path: "/snapshots",
  async handle(context) {
    await guardOperatorsWhenSigning(context);
    const { config, env, url } = context;
    return listSnapshots(config, bucketOf(env.SNAPSHOTS), linkMaker(config, url.origin));
  },
  openapi: () => ({
    "/snapshots": { get: { operationId: "listSnapshots", tags: ["snapshots"], summary: "Snapshot jobs and their latest files", responses: { "200": json({ type: "object" }, "The jobs."), ...errors("401", "503") } } },
  }),
};

/** POST /snapshots/<name>/run: an operator runs a job now. */
export const snapshotRunRoute: Route = {
  methods: ["POST"],
  path: "/snapshots/:name/run",
  async handle(context) {
    await requireAdmin(context.request, context.config);
    const job = findJob(context.config, context.request.params.name ?? "");
    // Whole seconds: a stamp has no milliseconds, and two clicks in one second are one run.
    const result = await runJob(job, Math.floor(Date.now() / 1000) * 1000, snapshotDeps(context));
    return Response.json(result, { status: result.status === "ok" ? 200 : 502 });
  },
  openapi: () => ({
    "/snapshots/{name}/run": {
      post: {
        operationId: "runSnapshot",
        tags: ["snapshots"],
        summary: "Run a snapshot job now (operators only)",
        security: ADMIN,
        parameters: [pathParameter("name", "The job's name.")],
        responses: { "200": json({ type: "object" }, "The run."), "502": json({ type: "object" }, "The run failed."), "401": error("Missing or wrong admin token."), ...errors("404", "503") },
      },
    },
  }),
};

const fileOperation = (method: "get" | "head"): Json => ({
  operationId: method === "get" ? "getSnapshot" : "headSnapshot",
  tags: ["snapshots"],
  summary: `${method === "get" ? "A" : "Headers of a"} snapshot file: latest.<ext>, <stamp>.<ext> or manifest.json`,
  parameters: [pathParameter("name", "The job's name."), pathParameter("file", "latest.csv, 20260102T030000Z.csv, manifest.json, ...")],
  responses: {
    "200": { description: "The file (Range gives 206)." },
    "206": { description: "Part of the file." },
    "304": { description: "Not modified." },
    "412": { description: "If-Match or If-Unmodified-Since did not hold." },
    "416": { description: "The range is past the end of the file." },
    ...errors("403", "404", "503"),
  },
});

/** GET|HEAD /snapshots/<name>/<file>: a snapshot file from R2, with validators and ranges. */
export const snapshotFileRoute: Route = {
  methods: ["GET", "HEAD"],
  path: "/snapshots/:name/:file",
  async handle(context) {
    await guardLink(context);
    const { request, config, env } = context;
    return serveSnapshotFile(request, request.params.name ?? "", request.params.file ?? "", config, bucketOf(env.SNAPSHOTS));
  },
  openapi: () => ({ "/snapshots/{name}/{file}": { get: fileOperation("get"), head: fileOperation("head") } }),
};
