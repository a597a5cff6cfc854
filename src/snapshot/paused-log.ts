import type { EncoderCarry } from "../format/types.ts";
import { concatBytes } from "../rows/bytes.ts";
import { CarryLost } from "./errors.ts";
import { stagingPrefix } from "./keys.ts";
import type { Target } from "./upload.ts";

// What each step of a file paused with, for a format whose end needs them all (Parquet's footer
// entries, see FormatEncoder.closing), kept in R2 beside the carried bytes rather than in the step's
// result: a step result holds only this log's reference, whatever the file's length. One JSON line
// per step, in staging objects: a tail short of SEGMENT_BYTES, rewritten by each step under the
// step's own key (a retried step rewrites its own and reads its predecessor's, as the carried
// bytes are), and full segments, numbered, each written once by the step that filled it (a retry
// of that step rewrites the same number). No step reads more than a tail; the last reads them all.

/** A segment's size: a step reads and writes at most about this much of the log. */
export const SEGMENT_BYTES = 256 * 1024;

/** The log as a step result carries it (JSON). */
export interface PausedLog {
  /** Full segments, numbered from 0. */
  segments: number;
  /** The lines short of a segment, and their count of bytes. */
  tail: { key: string; bytes: number } | null;
  /** The log's bytes in all: what FormatEncoder.closing's refusal judges. */
  bytes: number;
}

const segmentKey = (target: Target, n: number): string =>
  `${stagingPrefix(target.job, target.stamp, target.format)}paused-${n}`;
const tailKey = (target: Target, step: number): string =>
  `${stagingPrefix(target.job, target.stamp, target.format)}paused-tail-${step}`;

const utf8 = new TextEncoder();

async function read(bucket: R2Bucket, key: string, bytes?: number): Promise<Uint8Array> {
  const object = await bucket.get(key);
  const got = object === null ? null : new Uint8Array(await object.arrayBuffer());
  if (got === null || (bytes !== undefined && got.byteLength !== bytes))
    throw new CarryLost(
      `What the earlier steps paused with (${key}) is missing or cut short; the next run starts again.`,
    );
  return got;
}

/**
 * Step `step`'s paused state added to the log the last step left (null: the file's first step).
 * Returns the log to hand on; the step wrote one object of it (see writtenKey).
 */
export async function appendPaused(
  bucket: R2Bucket,
  target: Target,
  log: PausedLog | null,
  step: number,
  paused: EncoderCarry,
  segmentBytes = SEGMENT_BYTES,
): Promise<PausedLog> {
  const line = utf8.encode(`${JSON.stringify(paused)}\n`);
  const before = log?.tail ? await read(bucket, log.tail.key, log.tail.bytes) : new Uint8Array(0);
  const lines = concatBytes([before, line]);
  const segments = log?.segments ?? 0;
  const bytes = (log?.bytes ?? 0) + line.byteLength;
  // The tail two steps back is read by nobody any more (this step's retry reads the last one's).
  if (step > 2) await bucket.delete(tailKey(target, step - 2));
  if (lines.byteLength >= segmentBytes) {
    await bucket.put(segmentKey(target, segments), lines);
    return { segments: segments + 1, tail: null, bytes };
  }
  const key = tailKey(target, step);
  await bucket.put(key, lines);
  return { segments, tail: { key, bytes: lines.byteLength }, bytes };
}

/** The object the step that handed on `log` wrote: its tail, or the segment it filled (to delete after a cancel). */
export const writtenKey = (target: Target, log: PausedLog): string =>
  log.tail?.key ?? segmentKey(target, log.segments - 1);

/** Every step's paused state, in order, and this (last) step's after them. */
export async function readPaused(
  bucket: R2Bucket,
  target: Target,
  log: PausedLog | null,
  last: EncoderCarry,
): Promise<EncoderCarry[]> {
  const paused: EncoderCarry[] = [];
  const add = (bytes: Uint8Array): void => {
    for (const line of new TextDecoder().decode(bytes).split("\n"))
      if (line !== "") paused.push(JSON.parse(line) as EncoderCarry);
  };
  for (let n = 0; n < (log?.segments ?? 0); n++) add(await read(bucket, segmentKey(target, n)));
  if (log?.tail) add(await read(bucket, log.tail.key, log.tail.bytes));
  paused.push(last);
  return paused;
}
