// The bench's synthetic CKAN on loopback: `POST /api/action/datastore_search` as CKAN 2.10, 2.11 or 2.12
// answers it (bench/ckan/search.ts) and `GET /datastore/dump/<id>` (bench/ckan/dump.ts), over tables
// whose rows are generated once and kept serialised (bench/ckan/store.ts). With a cost model
// (bench/ckan/cost.ts) every answer leaves when a real CKAN's would; without one ("zero cost") it
// leaves at once, so the worker, not the upstream, is what gets measured.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { costParts, delay, SharedCpu, WorkerPool, type CostModel, type CostParts } from "./ckan/cost.ts";
import { dump } from "./ckan/dump.ts";
import { CkanError, search, type Resource, type Version } from "./ckan/search.ts";
import { RowStore } from "./ckan/store.ts";

/**
 * BENCH_TIMELINE=1: each search answer's arrival, start (a CKAN worker free), end of CKAN's work and
 * hand-over, in ms since the process started, on stderr: where an export waits, request by request.
 */
const TIMELINE = process.env.BENCH_TIMELINE === "1";

export type { Resource, Version } from "./ckan/search.ts";

export interface UpstreamStats {
  requests: number;
  bytes: number;
  /** Row chunks serialised on demand, not served from memory: while measuring this should stay 0. */
  generated: number;
  /** Pages answered per records_format. */
  formats: Record<string, number>;
  /** Each request's parameters (resource_id left out) and status, for telling where requests go. */
  log: string[];
  /** Seconds of CKAN work the cost model charged (summed over requests and dump pages). */
  modelSeconds: number;
  /** The datastore_search part of it, by where it goes. */
  modelParts: CostParts;
  /** How late answers left after the model's time: sum and worst, ms (timers on a busy machine). */
  lateMs: number;
  worstLateMs: number;
  /** Most requests in service or queued at once, and seconds spent queued for a CKAN worker. */
  peakRequests: number;
  queuedSeconds: number;
  /** Seconds CKAN's CPU had work in progress (requests or dump pages), and of them with no core to spare. */
  busySeconds: number;
  fullSeconds: number;
  /** When CKAN's first work since the reset began and its last ended (performance.now(), ms). */
  firstWorkAt: number | undefined;
  lastWorkAt: number | undefined;
}

export interface Upstream {
  /** Base URL to give the worker as CKAN_BASE_URL. */
  url: string;
  /** Which CKAN it answers as; may be changed between runs. */
  version: Version;
  /** The cost model, or undefined for zero cost; may be changed between runs. */
  model: CostModel | undefined;
  store: RowStore;
  stats: UpstreamStats;
  resetStats(): UpstreamStats;
  close(): Promise<void>;
}

const freshStats = (): UpstreamStats => ({
  requests: 0,
  bytes: 0,
  generated: 0,
  formats: {},
  log: [],
  modelSeconds: 0,
  modelParts: { fixed: 0, rows: 0, skipped: 0, listed: 0, counted: 0 },
  lateMs: 0,
  worstLateMs: 0,
  peakRequests: 0,
  queuedSeconds: 0,
  busySeconds: 0,
  fullSeconds: 0,
  firstWorkAt: undefined,
  lastWorkAt: undefined,
});

export async function startUpstream(options: {
  resources: Resource[];
  version?: Version;
  model?: CostModel;
  keepChunks?: number;
}): Promise<Upstream> {
  const resources = new Map(options.resources.map((r) => [r.id, r]));
  const store = new RowStore(options.keepChunks === undefined ? {} : { keepChunks: options.keepChunks });
  const stats = freshStats();
  const pool = new WorkerPool(options.model?.workers ?? 3);
  const cpu = new SharedCpu(options.model?.cores ?? 3);
  let origin = "";
  const late = (ms: number): void => {
    stats.lateMs += ms;
    stats.worstLateMs = Math.max(stats.worstLateMs, ms);
  };

  function send(res: ServerResponse, status: number, parts: Buffer[], summary: string): Promise<void> {
    const length = parts.reduce((n, p) => n + p.length, 0);
    stats.bytes += length;
    if (stats.log.length < 200) stats.log.push(`${status} ${summary}`);
    res.writeHead(status, { "content-type": "application/json;charset=utf-8", "content-length": length });
    for (const part of parts.slice(0, -1)) res.write(part);
    // The CKAN worker is busy until the whole answer is handed over.
    return new Promise((resolve) => {
      res.once("close", resolve);
      res.end(parts.at(-1), resolve);
    });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const arrived = performance.now();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    stats.requests++;
    const url = new URL(req.url ?? "/", origin);
    const help = `${origin}/api/3/action/help_show?name=datastore_search`;
    const model = upstream.model;
    pool.size = model?.workers ?? pool.size;
    cpu.cores = model?.cores ?? cpu.cores;
    if (req.method === "GET" && url.pathname.startsWith("/datastore/dump/")) {
      try {
        stats.bytes += await dump(url, res, {
          resources,
          version: upstream.version,
          store,
          model,
          pool,
          cpu,
          late,
          modelled: (s) => (stats.modelSeconds += s),
        });
        if (stats.log.length < 200) stats.log.push(`200 GET ${url.pathname}`);
      } catch (error) {
        if (!(error instanceof CkanError) || res.headersSent) throw error;
        await send(
          res,
          error.status,
          [Buffer.from(JSON.stringify({ help, success: false, error: error.error }))],
          `GET ${url.pathname}`,
        );
      }
      return;
    }
    // A distant CKAN's round trip holds none of its workers.
    if (model && model.latencyMs > 0) await delay(model.latencyMs);
    // gunicorn's worker: waited for, then held until the answer is handed over.
    const release = model ? await pool.acquire() : () => {};
    const acquired = performance.now();
    let summary = `${req.method} ${url.pathname}`;
    try {
      if (!url.pathname.endsWith("/api/action/datastore_search") || req.method !== "POST")
        throw new CkanError(404, { __type: "Not Found Error", message: "Not found" });
      let params: unknown;
      try {
        params = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      } catch {
        throw new CkanError(400, { __type: "Bad request", message: "Bad request - JSON Error: Invalid request body" });
      }
      if (params === null || typeof params !== "object" || Array.isArray(params))
        throw new CkanError(400, {
          __type: "Bad request",
          message: "Bad request - JSON Error: Request data must be a JSON object",
        });
      const { resource_id: _, ...shown } = params as Record<string, unknown>;
      summary = JSON.stringify(shown);
      const answer = search(params as Record<string, unknown>, resources, upstream.version, store, help);
      stats.formats[answer.format] = (stats.formats[answer.format] ?? 0) + 1;
      if (model) {
        const parts = costParts(model, answer.work);
        const cost = parts.fixed + parts.rows + parts.skipped + parts.listed + parts.counted;
        for (const key of ["fixed", "rows", "skipped", "listed", "counted"] as const)
          stats.modelParts[key] += parts[key];
        stats.modelSeconds += cost;
        late(await cpu.run(cost));
      }
      const computed = performance.now();
      await send(res, 200, answer.parts, summary);
      if (TIMELINE) {
        // The columns asked are the same on every page: left out, the rest of the request shows.
        const { fields: _fields, ...asked } = shown;
        console.error(
          `timeline ${[arrived, acquired, computed, performance.now()].map((t) => t.toFixed(0).padStart(6)).join(" ")} ${JSON.stringify(asked)}`,
        );
      }
    } catch (error) {
      if (!(error instanceof CkanError)) throw error;
      // An error still went through CKAN's stack: it costs the fixed part.
      if (model) late(await cpu.run(model.fixedMs / 1000));
      if (res.headersSent) res.destroy(error);
      else
        await send(
          res,
          error.status,
          [Buffer.from(JSON.stringify({ help, success: false, error: error.error }))],
          summary,
        );
    } finally {
      release();
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      console.error("bench upstream:", error);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const upstream: Upstream = {
    url: origin,
    version: options.version ?? "2.10",
    model: options.model,
    store,
    stats,
    resetStats() {
      const before = { ...stats };
      const {
        generated: _g,
        peakRequests: _p,
        queuedSeconds: _q,
        busySeconds: _b,
        fullSeconds: _f,
        firstWorkAt: _s,
        lastWorkAt: _e,
        ...plain
      } = freshStats();
      Object.assign(stats, plain);
      store.generated = 0;
      pool.peak = 0;
      pool.queuedSeconds = 0;
      cpu.reset();
      return before;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  // generated, peak and queued are read live from the store and the pool.
  Object.defineProperties(stats, {
    generated: { get: () => store.generated, enumerable: true, configurable: true },
    peakRequests: { get: () => pool.peak, enumerable: true, configurable: true },
    queuedSeconds: { get: () => pool.queuedSeconds, enumerable: true, configurable: true },
    busySeconds: { get: () => cpu.busySeconds, enumerable: true, configurable: true },
    fullSeconds: { get: () => cpu.fullSeconds, enumerable: true, configurable: true },
    firstWorkAt: { get: () => cpu.firstAt, enumerable: true, configurable: true },
    lastWorkAt: { get: () => cpu.lastAt, enumerable: true, configurable: true },
  });
  return upstream;
}
