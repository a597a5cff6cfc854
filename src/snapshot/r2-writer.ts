import { PartBuffer } from "./part-buffer.ts";
import { hex } from "../protocol/conditional.ts";
import { release } from "../rows/owned-bytes.ts";

/** R2's most parts per upload: with equal parts this bounds the largest snapshot. */
const MAX_PARTS = 10_000;

export interface WriteOptions {
  /** Parts are all this size but the last; a body no bigger goes up as one `put`. */
  partBytes: number;
  /** Where a multipart upload is assembled before the finished object is copied to its key. */
  stagingKey: string;
  httpMetadata: R2HTTPMetadata;
  /** Metadata that needs the finished object's size and hash. */
  customMetadata: (written: Written) => Record<string, string>;
}

export interface Written {
  bytes: number;
  sha256: string;
}


/**
 * R2 `put` needs a known length, and no server-side copy exists, so: a `get` body (whose length is
 * known) streamed straight into a `put`.
 */
export async function copyObject(bucket: R2Bucket, from: string, to: string, options: R2PutOptions): Promise<void> {
  const source = await bucket.get(from);
  if (source === null) throw new Error(`R2 object ${from} vanished before it could be copied`);
  await bucket.put(to, source.body, options);
}

/**
 * Writes a byte stream of unknown length to `key`, whole or not at all, in flat memory: one part
 * buffer at a time. A failure of the stream aborts the multipart upload, so nothing half-written is
 * ever visible; the finished object appears at `key` in one step.
 */
export async function writeObject(bucket: R2Bucket, key: string, body: ReadableStream<Uint8Array>, options: WriteOptions): Promise<Written> {
  const { partBytes, stagingKey, httpMetadata } = options;
  const digest = new crypto.DigestStream("SHA-256");
  const hashing = digest.getWriter();
  const reader = body.getReader();
  const buffer = new PartBuffer(partBytes);
  let bytes = 0;
  let upload: R2MultipartUpload | undefined;
  const parts: R2UploadedPart[] = [];

  const uploadPart = async (part: Uint8Array): Promise<void> => {
    if (parts.length >= MAX_PARTS) throw new Error(`snapshot is larger than ${MAX_PARTS} parts of ${partBytes} bytes`);
    upload ??= await bucket.createMultipartUpload(stagingKey, { httpMetadata });
    parts.push(await upload.uploadPart(parts.length + 1, part));
  };

  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      await buffer.add(value, uploadPart);
      await hashing.write(value);
      release(value);
    }
    await hashing.close();
    const written = { bytes, sha256: hex(await digest.digest) };
    const put = { httpMetadata, customMetadata: options.customMetadata(written) };
    if (upload === undefined) {
      await bucket.put(key, buffer.held(), put);
      return written;
    }
    if (buffer.held().byteLength > 0) await buffer.flush(uploadPart);
    await upload.complete(parts);
    upload = undefined;
    await copyObject(bucket, stagingKey, key, put);
    await bucket.delete(stagingKey);
    return written;
  } catch (error) {
    await upload?.abort().catch(() => {});
    await bucket.delete(stagingKey).catch(() => {});
    await reader.cancel(error).catch(() => {});
    throw error;
  }
}
