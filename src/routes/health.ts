import { siteFacts } from "../ckan/site.ts";
import { upstreamHealth } from "../discovery/health.ts";
import { redactor } from "../log/redact.ts";
import { snapshotJobs } from "../snapshot/jobs.ts";
import { errors, json } from "./openapi-parts.ts";
import type { Route, RequestContext } from "./route.ts";

/** A check costs CKAN a few small calls per alias: monitors polling every few seconds share one. */
const FRESH_MS = 15_000;
const recent = new Map<string, { at: number; body: Promise<Record<string, unknown>> }>();

async function check({ config, env, deps }: RequestContext): Promise<Record<string, unknown>> {
  const upstream = await upstreamHealth(config, deps.upstreamFetch);
  const { jobs, problems: jobProblems } = snapshotJobs(config);
  // Snapshots failing stop no export: they are warnings, which the status code does not count.
  const warnings = jobProblems.map((p) => p.message);
  if (jobs.length > 0 && env.SNAPSHOTS === undefined)
    warnings.push(
      `${jobs.length} snapshot job(s) are set but the SNAPSHOTS R2 binding is missing: add [[r2_buckets]] to wrangler.toml.`,
    );
  return {
    ok: upstream.problems.length === 0,
    checked: new Date().toISOString(),
    ckan: upstream.ckan,
    token: upstream.token,
    resources: upstream.resources,
    snapshots: { r2_binding: env.SNAPSHOTS !== undefined, jobs: jobs.length },
    problems: upstream.problems,
    warnings,
  };
}

/** GET /health: can an export work now, and if not, why, in words an operator can act on. */
export const healthRoute: Route = {
  methods: ["GET"],
  path: "/health",
  guards: ["operators when signing", "rate limit"],
  // With signing on it is for operators; one that reports a failure (a 503) is kept by no cache: the
  // next check may find it mended.
  cache: { kind: "max-age", seconds: FRESH_MS / 1000, operatorsOnly: true },
  async handle(context) {
    const { config } = context;
    // The settings that shape the answer, never the token itself.
    const key = JSON.stringify([
      config.datastoreSearchUrl,
      [...config.resources],
      config.apiToken !== undefined,
      context.env.SNAPSHOTS !== undefined,
    ]);
    let entry = recent.get(key);
    if (entry === undefined || Date.now() - entry.at > FRESH_MS) {
      entry = { at: Date.now(), body: check(context) };
      recent.set(key, entry);
      entry.body.catch(() => recent.delete(key));
    }
    // Learnt by this isolate's first aggregate on the site (never asked here: /health stays cheap).
    const sql = siteFacts(config).sqlSearch;
    const body: Record<string, unknown> = {
      ...(await entry.body),
      aggregates: {
        datastore_search_sql: sql === undefined ? "not asked yet" : sql ? "on" : "off",
        computed_by: sql === true ? "ckan-sql" : "worker",
      },
    };
    // CKAN's own words (its version, its plugins) are quoted: no piece of a secret goes with them.
    return new Response(redactor(context.env)(JSON.stringify(body)), {
      status: body.ok === true ? 200 : 503,
      headers: { "content-type": "application/json" },
    });
  },
  openapi: () => ({
    "/health": {
      get: {
        operationId: "health",
        tags: ["discovery"],
        summary:
          "Whether an export can work now: CKAN's version and DataStore, each alias, the token, R2 and the snapshot jobs",
        responses: {
          "200": json({ type: "object" }, "Exports can work; `warnings` may still name snapshot problems."),
          "503": json(
            {
              type: "object",
              properties: { ok: { const: false }, problems: { type: "array", items: { type: "string" } } },
            },
            "`problems` names what stops exports, or (`error.setting`) a missing setting.",
          ),
          ...errors("401", "429"),
        },
      },
    },
  }),
};
