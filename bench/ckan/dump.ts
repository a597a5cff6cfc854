// `/datastore/dump/<id>` as CKAN streams it: a CSV header (ending CRLF, as CKAN's does), then the
// rows as COPY text (LF), fetched inside CKAN in pages of 32000, each page written as it is ready.
// CKAN 2.12 pages its dump by keyset; 2.10 and 2.11 by offset, so there deep pages also pay for
// skipped rows. Each page costs what the cost model says a dump page costs, on CKAN's shared CPU; the
// dump holds one worker for its whole length, and a client that reads slowly holds it longer (writes
// wait to drain).
import type { ServerResponse } from "node:http";
import { DUMP_PAGE_ROWS, dumpPageSeconds, type CostModel, type SharedCpu, type WorkerPool } from "./cost.ts";
import { CkanError, notFound, type Resource, type Version } from "./search.ts";
import type { RowStore } from "./store.ts";

export { DUMP_PAGE_ROWS } from "./cost.ts";

export interface DumpContext {
  resources: Map<string, Resource>;
  version: Version;
  store: RowStore;
  model: CostModel | undefined;
  pool: WorkerPool;
  cpu: SharedCpu;
  /** Timer lateness, ms, per page written. */
  late(ms: number): void;
  /** Modelled seconds, per page. */
  modelled(seconds: number): void;
}

const wrote = (res: ServerResponse, chunk: Buffer | string): Promise<boolean> =>
  res.write(chunk) ? Promise.resolve(false) : new Promise((resolve) => res.once("drain", () => resolve(true)));

/** Streams the dump; returns the bytes written. */
export async function dump(url: URL, res: ServerResponse, ctx: DumpContext): Promise<number> {
  const id = decodeURIComponent(url.pathname.slice("/datastore/dump/".length));
  const resource = ctx.resources.get(id);
  if (resource === undefined) throw notFound(id);
  const format = url.searchParams.get("format") ?? "csv";
  if (format !== "csv")
    throw new CkanError(400, { __type: "Bad request", message: "the bench upstream dumps csv only" });
  const offset = Number(url.searchParams.get("offset") ?? 0);
  const limit = url.searchParams.has("limit") ? Number(url.searchParams.get("limit")) : Number.POSITIVE_INFINITY;
  const { shape, rows } = resource;
  const columns = shape.fields.map((_, i) => i);
  const end = Math.min(rows, offset + limit);

  const release = ctx.model ? await ctx.pool.acquire() : () => {};
  let bytes = 0;
  try {
    for (let at = offset, page = 0; at < end || page === 0; at += DUMP_PAGE_ROWS, page++) {
      const n = Math.max(0, Math.min(DUMP_PAGE_ROWS, end - at));
      if (ctx.model) {
        const cost = dumpPageSeconds(ctx.model, n, at);
        ctx.modelled(cost);
        ctx.late(await ctx.cpu.run(cost));
      }
      const parts = n > 0 ? ctx.store.slice(shape, "dump", columns, at + 1, at + 1 + n, rows) : [];
      if (page === 0) {
        res.writeHead(200, {
          "content-type": "text/csv; charset=utf-8",
          "content-disposition": `attachment; filename="${resource.id}.csv"`,
        });
        const header = `${shape.fields.map((f) => f.id).join(",")}\r\n`;
        bytes += Buffer.byteLength(header);
        await wrote(res, header);
      }
      // A client that reads slowly keeps CKAN waiting: the next page's query starts once this one is out.
      for (const part of parts) {
        bytes += part.length;
        await wrote(res, part);
      }
      if (n === 0) break;
    }
    await new Promise<void>((resolve) => res.end(resolve));
  } finally {
    release();
  }
  return bytes;
}
