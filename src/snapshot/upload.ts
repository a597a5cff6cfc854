import { CarryLost, TooManyParts } from "./errors.ts";
import { carryKey, datedKey, stagingPrefix } from "./keys.ts";
import { newestFirst, readManifest, updateManifest, type SnapshotEntry } from "./manifest.ts";
import { PartBuffer } from "./part-buffer.ts";
import type { UploadState } from "./run-record.ts";
import { Sha256 } from "./sha256.ts";
import type { FormatName } from "../query/formats.ts";

/** R2's most parts per upload: with equal parts this bounds the largest snapshot (8 MiB parts: 78 GiB). */
export const MAX_PARTS = 10_000;

/** Where a format's file goes: its job, run and format. */
export interface Target {
  job: string;
  stamp: string;
  format: FormatName;
}

/**
 * One snapshot file's way into R2, the same for every run and runner:
 * - `begin`: a multipart upload at the file's dated key (nothing is visible there until `seal`);
 * - `part`: bytes, hashed as they go by and gathered into equal parts, each uploaded once full;
 * - `carry`: a step's end: the bytes short of a part go to a staging object, the hash state and
 *   the parts' etags into the state the next step `open`s;
 * - `seal`: the upload completed at the dated key: the file appears whole, in one call, whatever its size;
 * - `publish`: the file listed in the manifest, which makes it `latest`;
 * - `abort`: what a format that failed or was cancelled left is gone (upload, staging, an unlisted dated file).
 * No step reads the file back, copies it or holds more than a part of it.
 */
export class SnapshotUpload {
  readonly #bucket: R2Bucket;
  readonly #target: Target;
  readonly #state: UploadState;
  readonly #partBytes: number;
  readonly #hash: Sha256;
  readonly #buffer: PartBuffer;
  readonly #newParts: UploadState["newParts"] = [];
  #parts: number;

  private constructor(
    bucket: R2Bucket,
    target: Target,
    state: UploadState,
    partBytes: number,
    carried: Uint8Array | undefined,
  ) {
    this.#bucket = bucket;
    this.#target = target;
    this.#state = state;
    this.#partBytes = partBytes;
    this.#hash = new Sha256(state.hash);
    this.#buffer = new PartBuffer(partBytes, carried);
    this.#parts = state.parts;
  }

  static async begin(bucket: R2Bucket, target: Target, options: R2MultipartOptions): Promise<UploadState> {
    const key = datedKey(target.job, target.stamp, target.format);
    const upload = await bucket.createMultipartUpload(key, options);
    return { key, id: upload.uploadId, parts: 0, newParts: [], hash: new Sha256().save(), carry: null };
  }

  /** The upload as the last step left it, its carried bytes read back (less than a part). */
  static async open(bucket: R2Bucket, target: Target, state: UploadState, partBytes: number): Promise<SnapshotUpload> {
    let carried: Uint8Array | undefined;
    if (state.carry !== null) {
      const object = await bucket.get(state.carry.key);
      if (object === null)
        throw new CarryLost(
          `The bytes carried over to this step (${state.carry.key}) are missing; the next run starts again.`,
        );
      carried = new Uint8Array(await object.arrayBuffer());
      if (carried.byteLength !== state.carry.bytes)
        throw new CarryLost(
          `The bytes carried over to this step are ${carried.byteLength}, not ${state.carry.bytes}; the next run starts again.`,
        );
    }
    return new SnapshotUpload(bucket, target, state, partBytes, carried);
  }

  /** Bytes of the file, in order; `bytes` may be freed once this resolves. */
  async part(bytes: Uint8Array): Promise<void> {
    this.#hash.update(bytes);
    await this.#buffer.add(bytes, (full) => this.#upload(full));
  }

  /**
   * The step's end. `ended`: the file is whole, so the short last part goes up now; else those bytes
   * wait in a staging object for the next step (named by `step`, so a retried step rewrites its own).
   */
  async carry(step: number, ended: boolean): Promise<UploadState> {
    const held = this.#buffer.held();
    let carry: UploadState["carry"] = null;
    if (ended) {
      if (held.byteLength > 0) await this.#buffer.flush((last) => this.#upload(last));
    } else if (held.byteLength > 0) {
      carry = {
        key: carryKey(this.#target.job, this.#target.stamp, this.#target.format, step),
        bytes: held.byteLength,
      };
      await this.#bucket.put(carry.key, held);
    }
    // The step before the last is done for good: its carried bytes are read by nobody any more.
    if (step > 2)
      await this.#bucket.delete(carryKey(this.#target.job, this.#target.stamp, this.#target.format, step - 2));
    return { ...this.#state, parts: this.#parts, newParts: this.#newParts, hash: this.#hash.save(), carry };
  }

  async #upload(bytes: Uint8Array): Promise<void> {
    if (this.#parts >= MAX_PARTS) throw new TooManyParts(MAX_PARTS, this.#partBytes);
    const uploaded = await this.#bucket
      .resumeMultipartUpload(this.#state.key, this.#state.id)
      .uploadPart(this.#parts + 1, bytes);
    this.#newParts.push({ partNumber: uploaded.partNumber, etag: uploaded.etag });
    this.#parts++;
  }

  /** The file's SHA-256 once its last step has carried: no byte is read again. */
  static sha256(state: UploadState): string {
    return new Sha256(state.hash).hex();
  }

  /**
   * The upload completed at the dated key: the file appears whole. Run again after it succeeded (a
   * retried step), it finds the file there and does nothing. `bytes`: what the steps wrote, checked.
   */
  static async seal(
    bucket: R2Bucket,
    state: UploadState,
    parts: UploadState["newParts"],
    bytes: number,
    options: R2MultipartOptions,
  ): Promise<void> {
    let object = await bucket.head(state.key);
    if (object === null && parts.length === 0) {
      // An empty file has no part to complete an upload with.
      await bucket
        .resumeMultipartUpload(state.key, state.id)
        .abort()
        .catch(() => {});
      object = await bucket.put(state.key, new Uint8Array(0), options);
    }
    if (object === null) object = await bucket.resumeMultipartUpload(state.key, state.id).complete(parts);
    if (object.size !== bytes)
      throw new Error(`the sealed snapshot ${state.key} holds ${object.size} bytes, not the ${bytes} written`);
  }

  /** The sealed file in the manifest, newest first: it is `latest` of its format from now on. Its staging objects go. */
  static async publish(bucket: R2Bucket, target: Target, entry: SnapshotEntry): Promise<void> {
    await updateManifest(bucket, target.job, (manifest) => {
      if (!manifest.snapshots.some((s) => s.key === entry.key)) manifest.snapshots.push(entry);
      manifest.snapshots.sort(newestFirst);
    });
    await deletePrefix(bucket, stagingPrefix(target.job, target.stamp, target.format));
  }

  /**
   * What a format that will not be published left: its upload aborted, its carried bytes deleted,
   * and its dated file deleted unless the manifest lists it (a file is in R2 only if listed).
   */
  static async abort(bucket: R2Bucket, target: Target, uploadId: string | null): Promise<void> {
    const key = datedKey(target.job, target.stamp, target.format);
    if (uploadId !== null)
      await bucket
        .resumeMultipartUpload(key, uploadId)
        .abort()
        .catch(() => {});
    if ((await bucket.head(key)) !== null) {
      const manifest = await readManifest(bucket, target.job);
      if (!manifest.snapshots.some((s) => s.key === key)) await bucket.delete(key);
    }
    await deletePrefix(bucket, stagingPrefix(target.job, target.stamp, target.format));
  }
}

async function deletePrefix(bucket: R2Bucket, prefix: string): Promise<void> {
  for (;;) {
    const listed = await bucket.list({ prefix });
    if (listed.objects.length > 0) await bucket.delete(listed.objects.map((o) => o.key));
    if (!listed.truncated) return;
  }
}
