import { siteFor } from "../ckan/site.ts";
import type { UpstreamFetch } from "../ckan/types.ts";
import type { Config } from "../config/config.ts";
import { openQuery, openQueryPart } from "../aggregate/either.ts";
import type { DeflateState } from "../format/deflate.ts";
import { ENCODERS } from "../format/index.ts";
import type { Redact } from "../log/redact.ts";
import { contentDisposition } from "../query/filename.ts";
import { FORMATS, type FormatName } from "../query/formats.ts";
import { concatBytes } from "../rows/bytes.ts";
import { own, release } from "../rows/owned-bytes.ts";
import type { Column } from "../rows/types.ts";
import { GzipFile, storedEncoding } from "./compress.ts";
import { writeDatapackage } from "./datapackage.ts";
import type { ExportPart } from "../export/pipeline.ts";
import type { EncoderCarry } from "../format/types.ts";
import { ColumnsChanged, JobChanged, RunCancelled } from "./errors.ts";
import type { SnapshotJob } from "./jobs.ts";
import { datedKey } from "./keys.ts";
import { updateManifest, type SnapshotEntry } from "./manifest.ts";
import { appendPaused, type PausedLog, readPaused, writtenKey } from "./paused-log.ts";
import { updateRunRecord, type FormatState, type RunRecord, type StepCarry, type UploadState } from "./run-record.ts";
import { SnapshotUpload, type Target } from "./upload.ts";

// The steps of one format of a run, the same whichever runner runs them (see procedure.ts):
// begin, write (as many as the file needs), seal, publish; or abandon.

export interface SnapshotDeps {
  bucket: R2Bucket;
  config: Config;
  upstreamFetch: UpstreamFetch;
  redact: Redact;
}

/** One format of one run, as every step of it sees it. */
export interface FormatRun {
  job: SnapshotJob;
  format: FormatName;
  stamp: string;
  /** When the run started (the claim step's time: the same in every replay). */
  started: string;
  instance: string;
}

const target = (run: FormatRun): Target => ({ job: run.job.name, stamp: run.stamp, format: run.format });

/**
 * An encoder that stops at a step boundary and resumes from a carried state: what stands between a
 * write step's export bytes (the export's encoder goes on from the rows written: see Continued) and
 * the bytes stored, for a file that is more than those bytes (gzip's deflate stream and trailer,
 * XLSX's ZIP). Each step opens one from what the last step carried (null in the file's first step),
 * hands it the step's chunks in order, and stops it: the step's last bytes, and what the next step
 * starts from, or at the export's end (`ended`) the file's own end and null. The carried state is
 * JSON in the run record and the step's result, so it must stay small (a deflater's CRC, sizes and
 * at most a block of input), and nothing in it may grow with the file.
 */
export interface StepEncoder {
  /** The bytes to store for one chunk of the export's (maybe none yet). */
  write(chunk: Uint8Array): Uint8Array;
  /** The step's end: its last bytes to store, and what the next step starts from (null once `ended`). */
  stop(ended: boolean): { bytes: Uint8Array; carried: StepCarry | null };
}

/** A format's step encoder, opened for one step from what the last step carried (null: the file's first step). */
export type StepFormat = (carried: StepCarry | null) => StepEncoder;

/** A file made in pieces whose state is a deflater's (format/deflate.ts): XLSX's ZIP, a gzip file. */
interface DeflatedFile {
  begin(): Uint8Array;
  write(chunk: Uint8Array): Uint8Array;
  save(): DeflateState;
  end(): Uint8Array;
}

const NOTHING = new Uint8Array(0);

/** The step encoder of a deflated file: its first bytes in its first step, its deflater's state carried, its end in its last. */
function deflatedSteps(open: (from?: DeflateState) => DeflatedFile): StepFormat {
  return (carried) => {
    const file = open(carried === null ? undefined : (carried as DeflateState));
    let begin: Uint8Array | undefined = carried === null ? file.begin() : undefined;
    const first = (bytes: Uint8Array): Uint8Array => {
      if (begin === undefined) return bytes;
      const joined = concatBytes([begin, bytes]);
      begin = undefined;
      return joined;
    };
    return {
      write: (chunk) => first(file.write(chunk)),
      stop: (ended) =>
        ended ? { bytes: first(file.end()), carried: null } : { bytes: first(NOTHING), carried: file.save() },
    };
  };
}

/** The export's bytes stored as they are: nothing to carry. */
const AS_IS: StepFormat = () => ({ write: (chunk) => chunk, stop: () => ({ bytes: NOTHING, carried: null }) });

/**
 * How a job stores a format in steps; undefined for a format written whole in one step (its encoder
 * cannot go on from a carried state).
 */
export function stepFormat(job: SnapshotJob, format: FormatName): StepFormat | undefined {
  const entry = ENCODERS[format];
  if (!entry.resumable) return undefined;
  if (storedEncoding(job, format) === "gzip") return deflatedSteps((from) => new GzipFile(from));
  const steppedPackage = entry.steppedPackage;
  return steppedPackage === undefined ? AS_IS : deflatedSteps(steppedPackage);
}

/** A dated file's HTTP and custom metadata, known before its first byte (size and hash are the manifest's). */
export function fileOptions(run: FormatRun): R2MultipartOptions {
  const encoding = storedEncoding(run.job, run.format);
  return {
    httpMetadata: {
      contentType: FORMATS[run.format].contentType,
      contentDisposition: contentDisposition(`${run.job.name}-${run.stamp}.${FORMATS[run.format].extension}`),
      cacheControl: "public, max-age=31536000, immutable",
      ...(encoding === undefined ? {} : { contentEncoding: encoding }),
    },
    customMetadata: { query: JSON.stringify(run.job.description), started: run.started, run: run.instance },
  };
}

/** The run's state after a step, for `/snapshots`, a cancel and the next run (only while this run holds the job). */
const mirror = (
  run: FormatRun,
  deps: Pick<SnapshotDeps, "bucket">,
  change: (record: RunRecord) => void,
): Promise<boolean> => updateRunRecord(deps.bucket, run.job.name, run.instance, change);

/** What a file is written from, as `FormatState.definition` keeps it. */
const definitionOf = (run: FormatRun): string =>
  JSON.stringify({
    query: run.job.queries[run.format],
    encoding: storedEncoding(run.job, run.format) ?? null,
    description: run.job.description,
  });

/** A deploy that changed the job while its file is written would join two exports into one file: the run stops. */
function sameDefinition(run: FormatRun, state: FormatState): void {
  if (state.definition !== undefined && state.definition !== definitionOf(run)) throw new JobChanged();
}

export async function beginFormat(run: FormatRun, deps: SnapshotDeps): Promise<FormatState> {
  const upload = await SnapshotUpload.begin(deps.bucket, target(run), fileOptions(run));
  const state: FormatState = {
    format: run.format,
    step: 0,
    rows: 0,
    bytes: 0,
    decodedBytes: 0,
    total: null,
    columns: [],
    definition: definitionOf(run),
    resume: null,
    carried: null,
    ended: false,
    upload,
    entry: null,
  };
  await mirror(run, deps, (record) => {
    record.current = state;
  });
  return state;
}

const sameColumns = (a: Column[], b: Column[]): boolean =>
  JSON.stringify(a.map((c) => [c.id, c.type])) === JSON.stringify(b.map((c) => [c.id, c.type]));

/** A step's counts and where the next goes on: the state it hands on, less what the upload says. */
type Written = Omit<FormatState, "upload" | "format" | "step" | "entry">;

/**
 * One write step: the export goes on from where the last step stopped, its bytes go through the
 * format's step encoder into the upload, and it stops at a page's end once it has written
 * SNAPSHOT_STEP_BYTES (a file written whole goes on to its end). Parts have fixed numbers, so a
 * retried step overwrites its own parts and nothing else.
 */
export async function writeStep(run: FormatRun, prev: FormatState, deps: SnapshotDeps): Promise<FormatState> {
  sameDefinition(run, prev);
  const upload = await SnapshotUpload.open(deps.bucket, target(run), prev.upload, deps.config.snapshotPartBytes);
  const steps = stepFormat(run.job, run.format);
  const next =
    steps === undefined ? await writeWhole(run, upload, deps) : await writePart(run, prev, steps, upload, deps);
  const step = prev.step + 1;
  const state: FormatState = {
    ...next,
    format: run.format,
    ...(prev.definition === undefined ? {} : { definition: prev.definition }),
    step,
    upload: await upload.carry(step, next.ended),
    entry: null,
  };
  const held = await mirror(run, deps, (record) => {
    record.current = state;
  });
  if (!held) {
    // Cancelled while this step wrote: what the cancel cleaned up must not come back.
    if (state.upload.carry !== null) await deps.bucket.delete(state.upload.carry.key);
    const log = pausedLog(state.carried);
    if (log !== null) await deps.bucket.delete(writtenKey(target(run), log));
    throw new RunCancelled();
  }
  return state;
}

/** Stored bytes into the upload, freed once there (as the HTTP sink frees its chunks: see owned-bytes.ts). */
async function store(upload: SnapshotUpload, bytes: Uint8Array): Promise<number> {
  if (bytes.byteLength === 0) return 0;
  const length = bytes.byteLength;
  await upload.part(bytes);
  release(bytes);
  return length;
}

/** One step's stretch of the export, through the step encoder, until the step is full or the export ends. */
async function writePart(
  run: FormatRun,
  prev: FormatState,
  steps: StepFormat,
  upload: SnapshotUpload,
  deps: SnapshotDeps,
): Promise<Written> {
  const { config } = deps;
  // A file stored as the export writes it carries what its export encoder paused with (Parquet's:
  // the reference to its footer entries' log, see logOrEnd); any other file its step encoder's state.
  const inExport = steps === AS_IS;
  const encoder = steps(inExport ? null : prev.carried);
  let produced = 0;
  let stored = 0;
  const full = (): boolean => produced >= config.snapshotStepBytes;
  const site = siteFor(config, deps.upstreamFetch);
  const query = run.job.queries[run.format]!;
  const exportCarried = inExport && pausedLog(prev.carried) === null ? (prev.carried ?? undefined) : undefined;
  const part = await openQueryPart(query, config, site, prev.resume ?? undefined, full, exportCarried);
  if (prev.step > 0 && !sameColumns(part.columns, prev.columns)) {
    await part.chunks.return();
    throw new ColumnsChanged();
  }
  const utf8 = new TextEncoder();
  for await (const chunk of part.chunks) {
    const bytes = typeof chunk === "string" ? own(utf8.encode(chunk)) : chunk;
    produced += bytes.byteLength;
    const out = encoder.write(bytes);
    if (out !== bytes) release(bytes);
    stored += await store(upload, out);
  }
  const ended = part.ended();
  const last = encoder.stop(ended);
  stored += await store(upload, last.bytes);
  const closed = part.closing === undefined ? undefined : await logOrEnd(run, prev, part, upload, deps);
  stored += closed?.stored ?? 0;
  return {
    rows: prev.rows + part.progress.rows,
    bytes: prev.bytes + stored,
    decodedBytes: prev.decodedBytes + produced,
    total: prev.total ?? part.resumeAt().total ?? null,
    columns: prev.step > 0 ? prev.columns : part.columns,
    resume: ended ? null : part.resumeAt(),
    carried: closed !== undefined ? closed.carried : inExport ? (part.carried() as StepCarry | null) : last.carried,
    ended,
  };
}

/** The paused log a step result carries (see paused-log.ts), or null for any other state. */
const pausedLog = (carried: StepCarry | null): PausedLog | null =>
  carried !== null && "paused" in carried ? (carried.paused as unknown as PausedLog) : null;

/**
 * For a format whose end needs what every step paused with (Parquet's footer entries): this step's
 * added to the log in R2, so the step result carries only the log's reference; or, at the export's
 * end, all of them read back and the file's end stored. Refused for good once they are too many.
 */
async function logOrEnd(
  run: FormatRun,
  prev: FormatState,
  part: ExportPart,
  upload: SnapshotUpload,
  deps: SnapshotDeps,
): Promise<{ stored: number; carried: StepCarry | null }> {
  const closing = part.closing!;
  const log = pausedLog(prev.carried);
  // A run begun before the log, whose step result held every entry so far: those come first.
  const earlier = log === null && prev.carried !== null ? [prev.carried as EncoderCarry] : [];
  const paused = part.carried() ?? {};
  const bytes = [...earlier, paused].reduce((n, p) => n + JSON.stringify(p).length + 1, log?.bytes ?? 0);
  const refusal = closing.refusal(bytes);
  if (refusal !== undefined) throw refusal;
  if (!part.ended()) {
    let next = log;
    for (const p of [...earlier, paused]) next = await appendPaused(deps.bucket, target(run), next, prev.step + 1, p);
    return { stored: 0, carried: { paused: next as unknown as StepCarry } };
  }
  const all = [...earlier, ...(await readPaused(deps.bucket, target(run), log, paused))];
  return { stored: await store(upload, own(closing.end(all))), carried: null };
}

/** The whole file in this one step, for a format that cannot stop at a step's end. */
async function writeWhole(run: FormatRun, upload: SnapshotUpload, deps: SnapshotDeps): Promise<Written> {
  const { config } = deps;
  const site = siteFor(config, deps.upstreamFetch);
  // R2 is the reader: no client to stall (a part's upload is waited for, however long it takes).
  const exported = await openQuery(run.job.queries[run.format]!, { ...config, stallSeconds: 0 }, site);
  const reader = exported.body.getReader();
  let stored = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      stored += await store(upload, value);
    }
  } catch (error) {
    await reader.cancel(error).catch(() => {});
    throw error;
  }
  // A file that ended whole but short (an XLSX sheet cut at a row limit) is not a snapshot.
  if (exported.progress.error !== undefined) throw exported.progress.error;
  return {
    rows: exported.progress.rows,
    bytes: stored,
    decodedBytes: exported.progress.bytes,
    total: exported.table.total ?? null,
    columns: exported.table.columns,
    resume: null,
    carried: null,
    ended: true,
  };
}

/**
 * The file made whole at its dated key. What the manifest will list is written to the run record
 * first: a run that ends between the two leaves a file its record describes, which a cancel or the
 * next run lists (see settleRun), never an unknown one.
 */
export async function sealFormat(
  run: FormatRun,
  state: FormatState,
  parts: UploadState["newParts"],
  deps: SnapshotDeps,
): Promise<FormatState> {
  sameDefinition(run, state);
  const encoding = storedEncoding(run.job, run.format);
  const entry: SnapshotEntry = {
    key: datedKey(run.job.name, run.stamp, run.format),
    format: run.format,
    stamp: run.stamp,
    rows: state.rows,
    bytes: state.bytes,
    sha256: SnapshotUpload.sha256(state.upload),
    started: run.started,
    finished: new Date().toISOString(),
    query: run.job.description,
    total: state.total,
    ...(encoding === undefined ? {} : { encoding, decoded_bytes: state.decodedBytes }),
  };
  const sealed: FormatState = { ...state, entry };
  const held = await mirror(run, deps, (record) => {
    record.current = sealed;
  });
  if (!held) throw new RunCancelled();
  await SnapshotUpload.seal(deps.bucket, state.upload, parts, state.bytes, fileOptions(run));
  return sealed;
}

/** The sealed file listed (it is `latest` from now on) and described in datapackage.json. */
export async function publishFormat(run: FormatRun, state: FormatState, deps: SnapshotDeps): Promise<SnapshotEntry> {
  sameDefinition(run, state);
  const entry = state.entry!;
  await SnapshotUpload.publish(deps.bucket, target(run), entry);
  await writeDatapackage(deps.bucket, run.job, entry, state.columns);
  await mirror(run, deps, (record) => {
    record.current = null;
    record.done.push({ format: run.format, status: "ok", rows: entry.rows, bytes: entry.bytes });
  });
  return entry;
}

/** A format that failed for good: nothing of it stays in R2 unless the manifest lists it. */
export async function abandonFormat(run: FormatRun, state: FormatState | null, deps: SnapshotDeps): Promise<void> {
  await SnapshotUpload.abort(deps.bucket, target(run), state?.upload.id ?? null);
  await mirror(run, deps, (record) => {
    record.current = null;
    record.done.push({ format: run.format, status: "failed", rows: state?.rows ?? 0, bytes: state?.bytes ?? 0 });
  });
}

/**
 * What a run that ended mid-step left (cancelled, or its instance terminated or gone): a file it had
 * sealed is listed, anything else of its current format is removed, and `last_run` says why it
 * ended unless the run recorded its own end. Run by a cancel, and by the next run before it claims
 * the job.
 */
export async function settleRun(
  record: RunRecord,
  job: SnapshotJob,
  why: string,
  deps: Pick<SnapshotDeps, "bucket">,
): Promise<void> {
  const current = record.current;
  if (current !== null) {
    const run: FormatRun = {
      job,
      format: current.format,
      stamp: record.stamp,
      started: record.started,
      instance: record.instance,
    };
    const sealed = current.entry === null ? null : await deps.bucket.head(current.entry.key);
    if (current.entry !== null && sealed?.size === current.entry.bytes) {
      await SnapshotUpload.publish(deps.bucket, target(run), current.entry);
      await writeDatapackage(deps.bucket, job, current.entry, current.columns);
    }
    await SnapshotUpload.abort(deps.bucket, target(run), sealed === null ? current.upload.id : null);
  }
  await updateManifest(deps.bucket, job.name, (manifest) => {
    if (manifest.last_run?.stamp === record.stamp && manifest.last_run.started === record.started) return;
    manifest.last_run = {
      status: "failed",
      stamp: record.stamp,
      started: record.started,
      finished: new Date().toISOString(),
      error: why,
    };
  });
}
