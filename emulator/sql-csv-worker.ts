import { findResource } from "./resources.ts";
import { csvRows } from "./sql-tables.ts";

// A worker thread writing a table's CSV batches while PostgreSQL copies the previous one: writing
// the text costs a third of a load, and PGlite runs on the main thread. Asked {id, from, to}, it
// answers {from, bytes} with the UTF-8 text, handed over without a copy. See sql-csv.ts.

interface Port {
  on(event: "message", listener: (message: { id: string; from: number; to: number }) => void): void;
  postMessage(message: unknown, transfer: ArrayBuffer[]): void;
}

const { parentPort } = (await import(/* @vite-ignore */ "node:worker_threads" as string)) as {
  parentPort: Port | null;
};
const encoder = new TextEncoder();
parentPort?.on("message", ({ id, from, to }) => {
  const resource = findResource(id);
  const bytes = encoder.encode(resource === undefined ? "" : csvRows(resource.table, from, to));
  parentPort.postMessage({ from, bytes }, [bytes.buffer as ArrayBuffer]);
});
