import { HttpError } from "../errors.ts";
import { redactor } from "../log/redact.ts";
import { runInline, type SnapshotDeps } from "../snapshot/procedure.ts";
import { cancelRun, runningRun, startRunNow } from "../snapshot/runs.ts";
import { parseSnapshotFile } from "../snapshot/keys.ts";
import { bucketOf, findJob, listSnapshots, snapshotObject } from "../snapshot/serve.ts";
import type { Runs } from "../snapshot/workflow.ts";
import { linkMaker } from "./guards.ts";
import { ADMIN, error, errors, json, pathParameter, type Json } from "./openapi-parts.ts";
import type { Route, RequestContext } from "./route.ts";
import { snapshotFileResponse } from "./snapshot-file.ts";

/** The Workflow that runs snapshots past one invocation, when it is bound (wrangler.toml's [[workflows]]). */
const runsOf = ({ env }: RequestContext): Runs | undefined => env.SNAPSHOT_RUNS as Runs | undefined;

/** What a run inside this invocation needs (the cron's, or an operator's without the Workflow). */
export const snapshotDeps = ({ env, config, deps }: Pick<RequestContext, "env" | "config" | "deps">): SnapshotDeps => ({
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
  cache: { kind: "no-cache" },
  async handle(context) {
    const { config, env, url } = context;
    return Response.json(
      await listSnapshots(config, bucketOf(env.SNAPSHOTS), linkMaker(config, url.origin), runsOf(context)),
    );
  },
  openapi: () => ({
    "/snapshots": {
      get: {
        operationId: "listSnapshots",
        tags: ["snapshots"],
        summary: "Snapshot jobs and their latest files",
        responses: { "200": json({ type: "object" }, "The jobs."), ...errors("401", "503") },
      },
    },
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
  // Answers about runs change from one second to the next.
  cache: { kind: "no-store" },
  async handle(context) {
    const { request, config, env } = context;
    const job = findJob(config, request.params.name ?? "");
    const runs = runsOf(context);
    const bucket = bucketOf(env.SNAPSHOTS);
    if (request.method === "GET" || request.method === "DELETE") {
      if (runs === undefined)
        throw new HttpError(
          404,
          `No run of ${job.name} is in progress: without the SNAPSHOT_RUNS Workflow a run lasts only the request that starts it.`,
        );
      if (request.method === "DELETE") return Response.json(await cancelRun(job, bucket, runs));
      const running = await runningRun(job.name, bucket, runs);
      if (running === undefined)
        throw new HttpError(404, `No run of ${job.name} is in progress. GET /snapshots shows its last run.`);
      return Response.json(running);
    }
    if (runs !== undefined) {
      const answer = await startRunNow(job, Date.now(), bucket, runs);
      if ("running" in answer) {
        const message = `Run ${answer.running.instance} of ${job.name} is in progress; cancel it first (DELETE /snapshots/${job.name}/run) or let it finish.`;
        return Response.json({ error: { status: 409, message }, running: answer.running }, { status: 409 });
      }
      return Response.json(answer, { status: answer.started ? 202 : 200 });
    }
    // Whole seconds: a stamp has no milliseconds.
    const result = await runInline(job, Math.floor(Date.now() / 1000) * 1000, "admin", snapshotDeps(context));
    return Response.json(result, {
      status: result.status === "ok" ? 200 : result.status === "skipped" ? 409 : 502,
    });
  },
  openapi: () => ({
    "/snapshots/{name}/run": {
      post: admin("runSnapshot", "Start a snapshot run now", {
        "200": json(
          { type: "object" },
          "Without the Workflow: the run, done. With it: a run of this second was already started.",
        ),
        "202": json({ type: "object" }, "The run started (a Workflow instance)."),
        "409": json({ type: "object" }, "A run of this job is in progress: it is in the body."),
        "502": json({ type: "object" }, "The run failed (without the Workflow)."),
      }),
      get: admin("showSnapshotRun", "The run in progress: format, step, rows and bytes so far, last error", {
        "200": json({ type: "object" }, "The run."),
      }),
      delete: admin("cancelSnapshotRun", "Cancel the run in progress: its upload is aborted, the manifest says so", {
        "200": json({ type: "object" }, "Cancelled."),
      }),
    },
  }),
};

const fileOperation = (method: "get" | "head"): Json => ({
  operationId: method === "get" ? "getSnapshot" : "headSnapshot",
  tags: ["snapshots"],
  summary: `${method === "get" ? "A" : "Headers of a"} snapshot file: latest.<ext>, <stamp>.<ext>, manifest.json or datapackage.json`,
  parameters: [
    pathParameter("name", "The job's name."),
    pathParameter("file", "latest.csv, 20260102T030000Z.csv, manifest.json, datapackage.json, ..."),
  ],
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
  // snapshot-file.ts answers the preconditions itself too, before reading R2: a 304 costs no read.
  conditional: true,
  // A dated file never changes (stored immutable); `latest` moves when the manifest does.
  cache: {
    kind: "stored",
    seconds: 300,
    moving: ({ request }) => parseSnapshotFile(request.params.file ?? "")?.kind === "latest",
  },
  async handle(context) {
    const { request, config, env } = context;
    const job = findJob(config, request.params.name ?? "");
    const file = request.params.file ?? "";
    const bucket = bucketOf(env.SNAPSHOTS);
    const notFound = new HttpError(404, `No snapshot ${file.slice(0, 64)} for job ${job.name}.`);
    return snapshotFileResponse(request, await snapshotObject(job, file, bucket), bucket, notFound);
  },
  openapi: () => ({ "/snapshots/{name}/{file}": { get: fileOperation("get"), head: fileOperation("head") } }),
};
