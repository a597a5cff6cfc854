import type { Config } from "../config/config.ts";
import { structuredSetting } from "../config/settings.ts";
import { HttpError } from "../errors.ts";
import { log } from "../log/log.ts";
import type { Redact } from "../log/redact.ts";
import { FORMATS, isFormatName, type FormatName } from "../query/formats.ts";
import { parseExportQuery, type ExportQuery } from "../query/export-query.ts";
import { parseAggregateQuery } from "../aggregate/query.ts";

/** A validated snapshot job: one export query per format, written to R2 under `<name>/`. */
export interface SnapshotJob {
  name: string;
  /** The trigger expression that runs it; undefined: every trigger. */
  cron: string | undefined;
  keep: number;
  formats: FormatName[];
  /** `gzip`: the job's CSV, TSV, JSON and NDJSON files are stored gzipped (see compress.ts). */
  compress: "gzip" | undefined;
  queries: Record<string, ExportQuery>;
  /** What the job asks for, as recorded in the manifest and object metadata (never a secret). */
  description: Record<string, unknown>;
}

export interface JobProblem {
  job: string;
  message: string;
}

export interface SnapshotJobs {
  jobs: SnapshotJob[];
  problems: JobProblem[];
}

const JOB_KEYS = new Set([
  "name",
  "resource",
  "resource_id",
  "q",
  "filters",
  "fields",
  "sort",
  "limit",
  "formats",
  "cron",
  "keep",
  "compress",
  "aggregate",
]);
const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;

class JobError extends Error {}

/** The job's query in link form, so jobs and links go through the one query parser. */
function asParams(job: Record<string, unknown>): URLSearchParams {
  const params = new URLSearchParams();
  for (const key of ["resource", "resource_id", "q", "sort"]) {
    const value = job[key];
    if (value === undefined) continue;
    if (typeof value !== "string") throw new JobError(`"${key}" must be text`);
    params.set(key, value);
  }
  if (job.filters !== undefined) params.set("filters", JSON.stringify(job.filters));
  if (job.fields !== undefined) {
    const fields = job.fields;
    if (typeof fields === "string") params.set("fields", fields);
    else if (Array.isArray(fields) && fields.every((f) => typeof f === "string"))
      params.set("fields", fields.join(","));
    else throw new JobError('"fields" must be a list of column names');
  }
  if (job.limit !== undefined) params.set("limit", String(job.limit));
  // An aggregate job: its group_by and measures as a link writes them; sort and limit are then of groups.
  if (job.aggregate !== undefined) {
    const aggregate = job.aggregate as Record<string, unknown> | null;
    if (
      aggregate === null ||
      typeof aggregate !== "object" ||
      Array.isArray(aggregate) ||
      Object.keys(aggregate).some((k) => k !== "group_by" && k !== "measures")
    ) {
      throw new JobError('"aggregate" must be {"group_by": "...", "measures": "..."}');
    }
    for (const key of ["group_by", "measures"]) {
      if (aggregate[key] === undefined) continue;
      if (typeof aggregate[key] !== "string") throw new JobError(`"aggregate.${key}" must be text, as in a link`);
      params.set(key, aggregate[key]);
    }
  }
  return params;
}

function parseJob(raw: unknown, config: Config, seen: Set<string>): SnapshotJob {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw new JobError("is not an object");
  const job = raw as Record<string, unknown>;
  const unknown = Object.keys(job).filter((k) => !JOB_KEYS.has(k));
  if (unknown.length > 0) throw new JobError(`has unknown key${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}`);
  const name = job.name;
  if (typeof name !== "string" || !SLUG.test(name))
    throw new JobError('needs a "name": lower-case letters, digits and dashes');
  if (seen.has(name)) throw new JobError(`uses the name "${name}" twice`);
  const formats = job.formats ?? ["csv"];
  if (
    !Array.isArray(formats) ||
    formats.length === 0 ||
    !formats.every((f) => typeof f === "string" && isFormatName(f))
  ) {
    throw new JobError(`"formats" must be a list of ${Object.keys(FORMATS).join(", ")}`);
  }
  const keep = job.keep ?? 30;
  if (typeof keep !== "number" || !Number.isInteger(keep) || keep < 1 || keep > 1000)
    throw new JobError('"keep" must be a whole number from 1 to 1000');
  const cron = job.cron;
  if (cron !== undefined && (typeof cron !== "string" || cron.trim() === ""))
    throw new JobError('"cron" must be a trigger expression');
  const compress = job.compress;
  if (compress !== undefined && compress !== "gzip") throw new JobError('"compress" must be "gzip" (or left out)');

  const params = asParams(job);
  const queries: Record<string, ExportQuery> = {};
  for (const format of new Set(formats as FormatName[])) {
    try {
      const parse = job.aggregate === undefined ? parseExportQuery : parseAggregateQuery;
      queries[format] = { ...parse(params, format, config), filename: `${name}.${format}` };
    } catch (error) {
      if (error instanceof HttpError) throw new JobError(error.message);
      throw error;
    }
  }
  const description: Record<string, unknown> = {};
  for (const key of ["resource", "resource_id", "q", "filters", "fields", "sort", "limit", "compress", "aggregate"]) {
    if (job[key] !== undefined) description[key] = job[key];
  }
  seen.add(name);
  return { name, cron, keep, formats: Object.keys(queries) as FormatName[], compress, queries, description };
}

/** Validates SNAPSHOT_JOBS; a bad job is reported and skipped, the others still run. */
export function parseSnapshotJobs(value: unknown, config: Config): SnapshotJobs {
  const jobs: SnapshotJob[] = [];
  const problems: JobProblem[] = [];
  if (value === undefined || value === "") return { jobs, problems };
  let list: unknown;
  try {
    list = structuredSetting("SNAPSHOT_JOBS", value);
  } catch {
    return { jobs, problems: [{ job: "SNAPSHOT_JOBS", message: "SNAPSHOT_JOBS is not valid JSON" }] };
  }
  if (!Array.isArray(list))
    return { jobs, problems: [{ job: "SNAPSHOT_JOBS", message: "SNAPSHOT_JOBS must be a list of jobs" }] };
  const seen = new Set<string>();
  list.forEach((raw, index) => {
    try {
      jobs.push(parseJob(raw, config, seen));
    } catch (error) {
      if (!(error instanceof JobError)) throw error;
      const name = (raw as { name?: unknown } | null)?.name;
      const label = typeof name === "string" ? name : `#${index + 1}`;
      // The parser's sentences ("No resource …") follow a colon, the job's own phrases ("has unknown key …") the name.
      const reason = error.message.replace(/\.$/, "");
      problems.push({
        job: label,
        message: `Snapshot job ${label}${/^[A-Z]/.test(reason) ? ": " : " "}${reason}; it is skipped.`,
      });
    }
  });
  return { jobs, problems };
}

const validated = new WeakMap<Config, SnapshotJobs>();

/** The jobs of this configuration, validated once against the aliases and bounds they refer to. */
export function snapshotJobs(config: Config): SnapshotJobs {
  let jobs = validated.get(config);
  if (jobs === undefined) {
    jobs = parseSnapshotJobs(config.snapshotJobs, config);
    validated.set(config, jobs);
  }
  return jobs;
}

/** The valid jobs a cron trigger runs (those whose `cron` is this expression, or that have none); the invalid ones are logged. */
export function dueJobs(config: Config, cron: string, redact: Redact): SnapshotJob[] {
  const { jobs, problems } = snapshotJobs(config);
  for (const problem of problems) log({ event: "snapshot_config", job: problem.job, error: problem.message }, redact);
  return jobs.filter((job) => job.cron === undefined || job.cron === cron);
}
