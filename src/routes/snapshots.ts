import { redactor } from "../log/redact.ts";
import { runJob, type SnapshotDeps } from "../snapshot/run.ts";
import { cancelRun, showRun, startRunNow } from "../snapshot/runs.ts";
import type { RunParams } from "../snapshot/workflow.ts";
import { bucketOf, findJob, listSnapshots, serveSnapshotFile } from "../snapshot/serve.ts";
import { linkMaker } from "./guards.ts";
import { ADMIN, error, errors, json, pathParameter, type Json } from "./openapi-parts.ts";
import { HttpError } from "../errors.ts";
import type { Route, RouteContext } from "./route.ts";

/** The Workflow that runs snapshots past one invocation, when it is bound (wrangler.toml's [[workflows]]). */
const runsOf = ({ env }: RouteContext): Workflow<RunParams> | undefined => env.SNAPSHOT_RUNS as Workflow<RunParams> | undefined;

/** What a run inside this invocation needs (the cron's, or an operator's without the Workflow). */
export const snapshotDeps = ({ env, config, deps }: Pick<RouteContext, "env" | "config" | "deps">): SnapshotDeps => ({
  bucket: bucketOf(env.SNAPSHOTS),
  config,
  upstreamFetch: deps.upstreamFetch,
  redact: redactor(env),
});

/** GET /snapshots: the jobs and their latest files; with signing on it hands out signed links, so it is for operators. */
export const snapshotListRoute: Route = {
  methods: ["GET"],
  path: "/snapshots",
  guards: ["operators when signing"],
  async handle(context) {
    const { config, env, url } = context;
    return listSnapshots(config, bucketOf(env.SNAPSHOTS), linkMaker(config, url.origin), runsOf(context));
  },
  openapi: () => ({
    "/snapshots": { get: { operationId: "listSnapshots", tags: ["snapshots"], summary: "Snapshot jobs and their latest files", responses: { "200": json({ type: "object" }, "The jobs."), ...errors("401", "503") } } },
  }),
};

const runParameters = [pathParameter("name", "The job's name.")];
const admin = (operationId: string, summary: string, responses: Json): Json => ({
  operationId,
  tags: ["snapshots", "operators"],
  summary,
  security: ADMIN,
  parameters: runParameters,
  responses: { ...responses, "401": error("Missing or wrong admin token."), ...errors("404", "503") },
});

/**
 * /snapshots/<name>/run, for operators: POST starts a run now, GET shows the one in progress,
 * DELETE cancels it. With the SNAPSHOT_RUNS Workflow a run goes on past this request (202); without
 * it the run happens inside it, as the cron's did.
 */
export const snapshotRunRoute: Route = {
  methods: ["POST", "GET", "DELETE"],
  path: "/snapshots/:name/run",
  guards: ["admin token"],
  async handle(context) {
    const { request, config, env } = context;
    const job = findJob(config, request.params.name ?? "");
    const runs = runsOf(context);
    if (request.method === "GET" || request.method === "DELETE") {
      if (runs === undefined) throw new HttpError(404, `No run of ${job.name} is in progress: without the SNAPSHOT_RUNS Workflow a run lasts only the request that starts it.`);
      return request.method === "GET" ? showRun(job, bucketOf(env.SNAPSHOTS), runs) : cancelRun(job, { bucket: bucketOf(env.SNAPSHOTS) }, runs);
    }
    if (runs !== undefined) return startRunNow(job, Date.now(), bucketOf(env.SNAPSHOTS), runs);
    // Whole seconds: a stamp has no milliseconds, and two clicks in one second are one run.
    const result = await runJob(job, Math.floor(Date.now() / 1000) * 1000, snapshotDeps(context));
    return Response.json(result, { status: result.status === "ok" ? 200 : 502 });
  },
  openapi: () => ({
    "/snapshots/{name}/run": {
      post: admin("runSnapshot", "Start a snapshot run now", {
        "200": json({ type: "object" }, "Without the Workflow: the run, done. With it: a run of this second was already started."),
        "202": json({ type: "object" }, "The run started (a Workflow instance)."),
        "409": json({ type: "object" }, "A run of this job is in progress: it is in the body."),
        "502": json({ type: "object" }, "The run failed (without the Workflow)."),
      }),
      get: admin("showSnapshotRun", "The run in progress: format, step, rows and bytes so far, last error", { "200": json({ type: "object" }, "The run.") }),
      delete: admin("cancelSnapshotRun", "Cancel the run in progress: its upload is aborted, the manifest says so", { "200": json({ type: "object" }, "Cancelled.") }),
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
  guards: ["signed link", "rate limit"],
  // serve.ts answers the preconditions itself too, before reading R2: a 304 costs no read.
  conditional: true,
  async handle(context) {
    const { request, config, env } = context;
    return serveSnapshotFile(request, request.params.name ?? "", request.params.file ?? "", config, bucketOf(env.SNAPSHOTS));
  },
  openapi: () => ({ "/snapshots/{name}/{file}": { get: fileOperation("get"), head: fileOperation("head") } }),
};
