import type { Resource } from "./resources.ts";
import { csvRows } from "./sql-tables.ts";

// The CSV batches of a table, in order, for COPY. Where Node's worker threads are at hand, the next
// batch is written on another core while PostgreSQL copies this one (sql-csv-worker.ts); anywhere
// else, or if the thread cannot start, each is written here when asked for.

/** Rows per COPY: enough to keep the round trips few, small enough to keep the CSV text small. */
export const COPY_BATCH = 50_000;

interface ThreadWorker {
  on(event: "message", listener: (message: { from: number; bytes: Uint8Array }) => void): void;
  on(event: "error", listener: (error: unknown) => void): void;
  postMessage(message: unknown): void;
  terminate(): Promise<number>;
}

async function startThread(): Promise<ThreadWorker | undefined> {
  try {
    const { Worker } = (await import(/* @vite-ignore */ "node:worker_threads" as string)) as {
      Worker: new (url: URL) => ThreadWorker;
    };
    return new Worker(new URL("./sql-csv-worker.ts", import.meta.url));
  } catch {
    return undefined;
  }
}

export async function* csvBatches(resource: Resource): AsyncGenerator<Blob> {
  const { id, table } = resource;
  const ranges: [number, number][] = [];
  for (let from = 0; from < table.rows; from += COPY_BATCH)
    ranges.push([from, Math.min(table.rows, from + COPY_BATCH)]);
  const thread = ranges.length > 1 ? await startThread() : undefined;
  if (thread === undefined) {
    for (const [from, to] of ranges) yield new Blob([csvRows(table, from, to)]);
    return;
  }
  try {
    // Answers arrive in the order asked; one batch ahead is enough to keep both cores busy.
    const pending: { resolve: (bytes: Uint8Array) => void; reject: (error: unknown) => void }[] = [];
    thread.on("message", ({ bytes }) => pending.shift()?.resolve(bytes));
    thread.on("error", (error) => pending.splice(0).forEach(({ reject }) => reject(error)));
    const ask = (from: number, to: number): Promise<Uint8Array> =>
      new Promise((resolve, reject) => {
        pending.push({ resolve, reject });
        thread.postMessage({ id, from, to });
      });
    let next = ask(...(ranges[0] as [number, number]));
    for (let i = 0; i < ranges.length; i++) {
      const bytes = await next;
      if (i + 1 < ranges.length) next = ask(...(ranges[i + 1] as [number, number]));
      yield new Blob([bytes as Uint8Array<ArrayBuffer>]);
    }
  } finally {
    await thread.terminate();
  }
}
