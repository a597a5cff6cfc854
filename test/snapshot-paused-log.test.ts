import { beforeEach, describe, expect, it } from "vitest";
import { CarryLost } from "../src/snapshot/errors.ts";
import { appendPaused, type PausedLog, readPaused, writtenKey } from "../src/snapshot/paused-log.ts";
import { bucket } from "./snapshot-helpers.ts";

// What each step of a Parquet snapshot paused with (its row groups' footer entries), kept in R2
// between steps: the step result holds the log's reference only, and the last step reads it all.
// Segments of 100 bytes here (256 KiB in a run) so a few steps fill several.

const target = { job: "log", stamp: "20261122T030000Z", format: "parquet" as const };
const SEGMENT = 100;
/** Step n's paused state: about 40 bytes of JSON. */
const pausedAt = (n: number) => ({ groups: [[16_384, [n, n * 2, 0, 3, `min ${n}`, `max ${n}`]]] });

beforeEach(async () => {
  const all = await bucket.list();
  if (all.objects.length > 0) await bucket.delete(all.objects.map((o) => o.key));
});

/** Steps 1..n appended in turn; each step's log as its result would carry it. */
async function steps(n: number, retried: number[] = []): Promise<PausedLog[]> {
  const logs: PausedLog[] = [];
  let log: PausedLog | null = null;
  for (let step = 1; step <= n; step++) {
    // A retried step runs again from the log before it, as the engine retries it.
    if (retried.includes(step)) await appendPaused(bucket, target, log, step, pausedAt(step), SEGMENT);
    log = await appendPaused(bucket, target, log, step, pausedAt(step), SEGMENT);
    logs.push(log);
  }
  return logs;
}

describe("the paused log of a Parquet snapshot", () => {
  it("gives back every step's entries in order, the last step's after them, across full segments", async () => {
    const logs = await steps(10);
    const last = logs.at(-1)!;
    expect(last.segments).toBeGreaterThanOrEqual(3);
    const all = await readPaused(bucket, target, last, pausedAt(11));
    expect(all).toEqual(Array.from({ length: 11 }, (_, i) => pausedAt(i + 1)));
    // What a step result carries stays the same size, whatever the steps so far.
    const sizes = logs.map((log) => JSON.stringify(log).length);
    expect(Math.max(...sizes)).toBeLessThan(150);
    expect(last.bytes).toBe(all.slice(0, 10).reduce((n, p) => n + JSON.stringify(p).length + 1, 0));
  });

  it("has each step's entries once when steps are retried, one that filled a segment too", async () => {
    const once = await steps(10);
    const filled = once.findIndex((log, i) => i > 0 && log.segments > once[i - 1]!.segments) + 1;
    const tailed = once.findIndex((log) => log.tail !== null) + 1;
    await bucket.delete((await bucket.list()).objects.map((o) => o.key));
    const logs = await steps(10, [filled, tailed]);
    expect(logs).toEqual(once);
    expect(await readPaused(bucket, target, logs.at(-1)!, pausedAt(11))).toEqual(
      Array.from({ length: 11 }, (_, i) => pausedAt(i + 1)),
    );
  });

  it("leaves at most the last two steps' tails beside the full segments", async () => {
    const logs = await steps(10);
    const keys = (await bucket.list()).objects.map((o) => o.key);
    expect(keys.filter((k) => k.includes("paused-tail-")).length).toBeLessThanOrEqual(2);
    expect(keys).toContain(writtenKey(target, logs.at(-1)!));
  });

  it("says the run must start again when a step's tail is gone", async () => {
    const log = (await steps(4)).at(-1)!;
    expect(log.tail).not.toBeNull();
    await expect(readPaused(bucket, target, log, pausedAt(5))).resolves.toHaveLength(5);
    await bucket.delete(log.tail!.key);
    await expect(readPaused(bucket, target, log, pausedAt(5))).rejects.toThrow(CarryLost);
  });
});
