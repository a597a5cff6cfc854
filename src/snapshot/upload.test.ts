import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { isPermanent, TooManyParts } from "./errors.ts";
import { MAX_PARTS, SnapshotUpload } from "./upload.ts";

const bucket = (env as { SNAPSHOTS: R2Bucket }).SNAPSHOTS;
const MiB = 1024 * 1024;

describe("a snapshot file's upload", () => {
  it("refuses the part past R2's 10,000 as TooManyParts, a failure no try mends, and never completes", async () => {
    const target = { job: "limits", stamp: "20261120T030000Z", format: "csv" as const };
    const begun = await SnapshotUpload.begin(bucket, target, {});
    // As the last step would hand it on when the file had filled every part R2 allows.
    const upload = await SnapshotUpload.open(bucket, target, { ...begun, parts: MAX_PARTS }, 5 * MiB);
    const error = await upload.part(new Uint8Array(5 * MiB)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TooManyParts);
    expect(isPermanent(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /larger than 10000 parts of 5242880 bytes \(SNAPSHOT_PART_BYTES\): raise SNAPSHOT_PART_BYTES/,
    );
    await SnapshotUpload.abort(bucket, target, begun.id);
    expect((await bucket.list({ prefix: "limits/" })).objects).toEqual([]);
  });

  it("hashes the bytes as they go, across steps, to the file's own SHA-256", async () => {
    const target = { job: "hashed", stamp: "20261120T030000Z", format: "csv" as const };
    let state = await SnapshotUpload.begin(bucket, target, {});
    const bytes = new Uint8Array(12 * MiB + 123).map((_, i) => (i * 7) & 255);
    const parts: typeof state.newParts = [];
    // Three steps, each a fresh upload object from the state the last one handed on (carry included).
    for (const [n, [from, to]] of [
      [0, 4 * MiB + 1],
      [4 * MiB + 1, 9 * MiB],
      [9 * MiB, bytes.length],
    ].entries()) {
      const upload = await SnapshotUpload.open(bucket, target, state, 5 * MiB);
      await upload.part(bytes.slice(from, to));
      state = await upload.carry(n + 1, to === bytes.length);
      parts.push(...state.newParts);
    }
    await SnapshotUpload.seal(bucket, state, parts, bytes.length, {});
    const stored = new Uint8Array(await (await bucket.get(state.key))!.arrayBuffer());
    const want = [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))]
      .map((b) => b.toString(16).padStart(2, "0"))
      .join("");
    expect(stored).toEqual(bytes);
    expect(SnapshotUpload.sha256(state)).toBe(want);
    await bucket.delete(state.key);
    await SnapshotUpload.abort(bucket, target, null);
    expect((await bucket.list({ prefix: "hashed/" })).objects).toEqual([]);
  });
});
