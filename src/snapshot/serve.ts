import type { Config } from "../config/config.ts";
import { bindingError, HttpError } from "../errors.ts";
import { FORMATS, type FormatName } from "../query/formats.ts";
import { snapshotJobs, type SnapshotJob } from "./jobs.ts";
import { datapackageKey, datedKey, manifestKey, parseSnapshotFile, stampTime } from "./keys.ts";
import { readManifest } from "./manifest.ts";
import { runningRun, type RunView } from "./runs.ts";
import type { Runs } from "./workflow.ts";

// What the snapshot routes serve, as data and R2 keys; routes/snapshots.ts makes the responses.

export function bucketOf(bucket: R2Bucket | undefined): R2Bucket {
  if (bucket === undefined) {
    throw bindingError("SNAPSHOTS", "the R2 bucket", "[[r2_buckets]]");
  }
  return bucket;
}

export function findJob(config: Config, name: string): SnapshotJob {
  const job = snapshotJobs(config).jobs.find((j) => j.name === name);
  if (job === undefined)
    throw new HttpError(404, `No snapshot job is named "${name.slice(0, 64)}". GET /snapshots lists them.`);
  return job;
}

/**
 * GET /snapshots: every job, its latest snapshot per format with links, and the jobs that were
 * skipped; with the snapshot Workflow bound (`runs`), each job's run in progress too (`running`).
 */
export async function listSnapshots(
  config: Config,
  bucket: R2Bucket,
  link: (path: string) => Promise<string>,
  runs?: Runs,
) {
  const jobs = await Promise.all(
    snapshotJobs(config).jobs.map(async (job) => {
      const manifest = await readManifest(bucket, job.name);
      const latest: Record<string, unknown> = {};
      for (const format of job.formats) {
        const entry = manifest.snapshots.find((s) => s.format === format);
        if (entry === undefined) continue;
        latest[format] = {
          time: new Date(stampTime(entry.stamp)).toISOString(),
          rows: entry.rows,
          bytes: entry.bytes,
          sha256: entry.sha256,
          ...(entry.encoding === undefined ? {} : { encoding: entry.encoding, decoded_bytes: entry.decoded_bytes }),
          url: await link(`/snapshots/${job.name}/latest.${FORMATS[format].extension}`),
          dated_url: await link(`/snapshots/${job.name}/${entry.stamp}.${FORMATS[format].extension}`),
        };
      }
      const running: RunView | null | undefined =
        runs === undefined ? undefined : ((await runningRun(job.name, bucket, runs)) ?? null);
      return {
        name: job.name,
        cron: job.cron ?? null,
        formats: job.formats,
        keep: job.keep,
        query: job.description,
        latest,
        last_run: manifest.last_run,
        ...(running === undefined ? {} : { running }),
        manifest: await link(`/snapshots/${job.name}/manifest.json`),
        datapackage: await link(`/snapshots/${job.name}/datapackage.json`),
      };
    }),
  );
  return { jobs, problems: snapshotJobs(config).problems };
}

/** A snapshot file to send: its R2 key, and for `latest` the name and caching it is sent with. */
export interface SnapshotObject {
  key: string;
  latest?: { format: FormatName; filename: string };
}

/**
 * The R2 key behind `/snapshots/<name>/<file>`. `latest.<ext>` is the manifest's newest file of the
 * format (no copy of it is kept): the manifest lists a file once it is whole, so `latest` moves
 * when the manifest does, in one write.
 */
export async function snapshotObject(job: SnapshotJob, fileName: string, bucket: R2Bucket): Promise<SnapshotObject> {
  const file = parseSnapshotFile(fileName);
  const notFound = new HttpError(404, `No snapshot ${fileName.slice(0, 64)} for job ${job.name}.`);
  if (file === undefined) throw notFound;
  if (file.kind === "manifest") return { key: manifestKey(job.name) };
  if (file.kind === "datapackage") return { key: datapackageKey(job.name) };
  if (!job.formats.includes(file.format)) throw notFound;
  if (file.kind === "dated") return { key: datedKey(job.name, file.stamp, file.format) };
  const newest = (await readManifest(bucket, job.name)).snapshots.find((s) => s.format === file.format);
  if (newest === undefined) throw notFound;
  return {
    key: newest.key,
    latest: { format: file.format, filename: `${job.name}.${FORMATS[file.format].extension}` },
  };
}
