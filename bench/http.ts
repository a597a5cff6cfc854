// HTTP helpers of the bench: downloads read to the end and thrown away, counted as they pass.
import { get, type IncomingMessage } from "node:http";
import { createGunzip } from "node:zlib";

export interface Download {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  bytes: number;
  ttfbMs: number;
  wallMs: number;
  tail: string;
  /** Set when the connection ended before the response did. */
  cutOff?: string;
}

/** Reads a response to the end, handing each chunk to the sink `open` makes for it, keeping none of it. */
export function download(
  url: string,
  headers: Record<string, string>,
  open: (response: IncomingMessage) => (chunk: Buffer) => void,
): Promise<Download> {
  return new Promise((resolve) => {
    const begun = performance.now();
    const request = get(url, { agent: false, headers }, (response) => {
      let ttfbMs = Number.NaN;
      let bytes = 0;
      let last: Buffer = Buffer.alloc(0);
      let done = false;
      const onChunk = open(response);
      const finish = (cutOff?: string): void => {
        if (done) return;
        done = true;
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          bytes,
          ttfbMs,
          wallMs: performance.now() - begun,
          tail: last.subarray(-300).toString(),
          ...(cutOff ? { cutOff } : {}),
        });
      };
      response.on("data", (chunk: Buffer) => {
        if (bytes === 0) ttfbMs = performance.now() - begun;
        bytes += chunk.length;
        onChunk(chunk);
        last = chunk;
      });
      response.on("end", () => finish());
      // A cut-off download is a result to report, not a reason to stop the benchmark.
      response.on("error", (error) => finish(error.message));
      response.on("close", () => finish(response.complete ? undefined : "the connection closed before the end"));
    });
    // No answer at all (the worker crashed or never listened) is also a result to report.
    request.on("error", (error) =>
      resolve({
        status: 0,
        headers: {},
        bytes: 0,
        ttfbMs: Number.NaN,
        wallMs: performance.now() - begun,
        tail: "",
        cutOff: error.message,
      }),
    );
  });
}

export async function getJson<T>(url: string): Promise<{ body: T; wallMs: number }> {
  const d = await new Promise<{ text: string; wallMs: number; status: number }>((resolve, reject) => {
    const begun = performance.now();
    get(url, { agent: false }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (c: string) => (text += c));
      response.on("end", () => resolve({ text, wallMs: performance.now() - begun, status: response.statusCode ?? 0 }));
      response.on("error", reject);
    }).on("error", reject);
  });
  if (d.status !== 200) throw new Error(`${url} answered ${d.status}: ${d.text.slice(0, 300)}`);
  return { body: JSON.parse(d.text) as T, wallMs: d.wallMs };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Lines in a body, read through gunzip when it is compressed. */
export function lineCounter(compressed: boolean): { write(chunk: Buffer): void; count(): Promise<number> } {
  let lines = 0;
  const tally = (chunk: Buffer): void => {
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
  };
  if (!compressed) return { write: tally, count: async () => lines };
  const gunzip = createGunzip();
  gunzip.on("data", tally);
  const ended = new Promise<void>((resolve) => {
    gunzip.on("end", resolve);
    gunzip.on("error", () => resolve());
  });
  return { write: (chunk) => void gunzip.write(chunk), count: async () => (gunzip.end(), await ended, lines) };
}

/** CSV records in a body: line ends outside quotes (cells may hold line breaks). Uncompressed only. */
export function csvRecordCounter(): { write(chunk: Buffer): void; count(): Promise<number> } {
  let records = 0;
  let quoted = false;
  return {
    write(chunk) {
      for (let i = 0; i < chunk.length; i++) {
        const c = chunk[i];
        if (c === 34) quoted = !quoted;
        else if (c === 10 && !quoted) records++;
      }
    },
    count: async () => records,
  };
}
