import { describe, expect, it } from "vitest";
import csvAnswer from "../../test/fixtures/ckan-2.12/records_csv.json";
import { freedWhile } from "../../test/freed-buffers.ts";
import { parseConfig } from "../config/config.ts";
import { csvRecordsReader } from "../format/csv-passthrough.ts";
import { CsvRecordsStream, RowEndGuesses } from "../format/csv-records.ts";
import type { Column } from "../rows/types.ts";
import { memberAt } from "../rows/json-bytes.ts";
import { CkanClient } from "./client.ts";
import { streamedPage } from "./streamed-page.ts";

const utf8 = new TextEncoder();
const fields = csvAnswer.body.result.fields as Column[];
const reader = () => csvRecordsReader(fields, fields.length, false);
const answer = utf8.encode(csvAnswer.raw_body_text);
const config = parseConfig({ CKAN_BASE_URL: "https://portal.example", UPSTREAM_RETRIES: "0" });

/** An answer's body in chunks of `size` bytes that, when `breakAt` is set, errors after that many bytes. */
function body(bytes: Uint8Array, size: number, breakAt?: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (breakAt !== undefined && at >= breakAt) return controller.error(new TypeError("network connection lost"));
      if (at >= bytes.length) return controller.close();
      const end = Math.min(bytes.length, at + size, breakAt ?? bytes.length);
      controller.enqueue(bytes.slice(at, end));
      at = end;
    },
  });
}

/** The same as a byte stream (as fetch's body is): read into the reader's own buffer. */
function byteBody(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      if (at >= bytes.length) {
        controller.close();
        // A read waiting on a closed byte stream ends only when answered (with its buffer, empty).
        controller.byobRequest?.respond(0);
        return;
      }
      const end = Math.min(bytes.length, at + size);
      controller.enqueue(bytes.slice(at, end));
      at = end;
    },
  });
}

/** A byte stream that sends the first `stallAt` bytes, then nothing more, its connection left open. */
function stalledByteBody(bytes: Uint8Array, stallAt: number): ReadableStream<Uint8Array> {
  let sent = false;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      if (sent) return new Promise<void>(() => {});
      sent = true;
      controller.enqueue(bytes.slice(0, stallAt));
    },
  });
}

/** A client whose CKAN answers with `bodies` in turn, counting requests. */
function upstream(bodies: (() => ReadableStream<Uint8Array>)[], settings = config) {
  let requests = 0;
  const client = new CkanClient(
    settings,
    async () =>
      new Response(bodies[Math.min(requests++, bodies.length - 1)]!(), {
        status: 200,
        headers: { "content-type": "application/json" },
      }),
  );
  return { client, requests: () => requests };
}

/** The page's rows and CKAN's total, read by the byte pass or guessing row ends (as exports read). */
async function read(
  client: CkanClient,
  guess = false,
): Promise<{ csv: string; rows: number; total: number | undefined }> {
  const signal = new AbortController().signal;
  const fetch = {
    client,
    body: { resource_id: "r", limit: 12 },
    signal,
    stream: () => new CsvRecordsStream(reader(), { guess: guess ? new RowEndGuesses() : undefined }),
    reader: reader(),
  };
  const pages = streamedPage(fetch, client.open(fetch.body, signal));
  let csv = "";
  let rows = 0;
  for (;;) {
    const next = await pages.next();
    if (next.done) return { csv, rows, total: next.value.total };
    csv += new TextDecoder().decode(next.value.page.bytes);
    rows += next.value.page.rows;
  }
}

describe("a page read as CKAN's answer arrives", () => {
  const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);
  const whole = (bytes: Uint8Array): string => text(reader()(bytes, memberAt(bytes, "result", "records")).page.bytes);
  /** The answer with its twelve rows `times` over: a page of many batches. */
  function big(times: number): Uint8Array {
    const at = memberAt(answer, "result", "records");
    const end = text(answer).indexOf('", "fields"');
    const rows = answer.subarray(at + 1, end);
    const out = new Uint8Array(answer.length + rows.length * (times - 1));
    out.set(answer.subarray(0, at + 1));
    for (let k = 0; k < times; k++) out.set(rows, at + 1 + k * rows.length);
    out.set(answer.subarray(end), at + 1 + times * rows.length);
    return out;
  }

  it.each([false, true])(
    "gives the page's rows in order and CKAN's result once the answer ends (guessing row ends: %s)",
    async (guess) => {
      const { client, requests } = upstream([() => body(answer, 97)]);
      expect(await read(client, guess)).toEqual({ csv: whole(answer), rows: 12, total: csvAnswer.body.result.total });
      expect(requests()).toBe(1);
    },
  );

  it.each([false, true])(
    "asks again for a page whose answer breaks off half-read, and hands on none of its rows twice (guessing row ends: %s)",
    async (guess) => {
      // Over a megabyte of rows: batches are handed on before each break, at a different row each time.
      const page = big(400);
      const { client, requests } = upstream([
        () => body(page, 4099, 400_000),
        () => body(page, 65_536, 900_000),
        () => body(page, 10_007),
      ]);
      expect(await read(client, guess)).toEqual({ csv: whole(page), rows: 4800, total: csvAnswer.body.result.total });
      expect(requests()).toBe(3);
    },
  );

  it("frees the buffer it read the answer into once the answer ends, not at the next collection", async () => {
    // Each read hands the buffer back as a new ArrayBuffer, the end of the answer too: that last one
    // holds the bytes, and left to the collector it stayed among the isolate's ArrayBuffers (a page's
    // worth each, growing with the pages of an export).
    const { client } = upstream([() => byteBody(answer, 1000)]);
    const { result, freed } = await freedWhile(() => read(client));
    expect(result.rows).toBe(12);
    // The answer (11 KB) never fills the 256 KB read buffer, nor does any other buffer reach its size.
    expect(freed.filter((length) => length === 256 * 1024)).toHaveLength(1);
  });

  it("asks again for a page whose answer stops sending for UPSTREAM_TIMEOUT_SECONDS while it is read", async () => {
    // As fetch's body is: a byte stream, read into the reader's own buffer.
    const quick = parseConfig({
      CKAN_BASE_URL: "https://portal.example",
      UPSTREAM_RETRIES: "0",
      UPSTREAM_TIMEOUT_SECONDS: "1",
    });
    const { client, requests } = upstream([() => stalledByteBody(answer, 3000), () => byteBody(answer, 1000)], quick);
    expect(await read(client)).toEqual({ csv: whole(answer), rows: 12, total: csvAnswer.body.result.total });
    expect(requests()).toBe(2);
  });

  it("fails the export with a 502 once the answer broke off three times", async () => {
    const { client } = upstream([() => body(answer, 50, 300)]);
    await expect(read(client)).rejects.toMatchObject({ status: 502, message: /broke off 3 times/ });
  });
});
