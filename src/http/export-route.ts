import { siteFor, type CkanSite } from "../ckan/site.ts";
import type { Table } from "../ckan/table.ts";
import { admitClient, IsolateBusy } from "../ckan/page-budget.ts";
import { clientOf } from "../security/rate-limit.ts";
import { log } from "../log/log.ts";
import type { HttpError } from "../errors.ts";
import type { UpstreamFetch } from "../ckan/types.ts";
import { contentEtag } from "../protocol/conditional.ts";
import type { Config } from "../config/config.ts";
import type { ExportQuery } from "../query/export-query.ts";
import { describeExport, openExport, type ExportProgress, type OpenExport } from "../export/pipeline.ts";
import { readBody } from "./buffer.ts";
import { freedOnceWritten } from "./freed-once-written.ts";
import { downloadHeaders } from "./download.ts";
import type { Keep } from "../protocol/keep.ts";
import { MIN_BYTES_PER_SECOND, watchedReader } from "../export/byte-stream.ts";
import type { RequestInfo } from "./request-log.ts";

export interface ExportRouteDeps {
  config: Config;
  upstreamFetch: UpstreamFetch;
  info: RequestInfo;
  /** Where the answer goes for the cache the route's policy chose (routes/cache-policy.ts). */
  keep: Keep;
  /** A stale cache entry's refresh: the whole export even for a HEAD, and no client's place taken. */
  refresh: boolean;
}

/**
 * What a download route computes, between its link and its bytes: exports (rows from CKAN) and
 * aggregates (groups computed from them) share everything else here (edge cache, ETag, 304, HEAD).
 */
export interface Pipeline<Q extends ExportQuery = ExportQuery> {
  open(
    query: Q,
    config: Config,
    site: CkanSite,
    onDone: (progress: ExportProgress) => void,
    upstreamFetch: UpstreamFetch,
  ): Promise<OpenExport>;
  /** The headers GET would send, without the body (for HEAD). */
  describe(
    query: Q,
    config: Config,
    site: CkanSite,
  ): Promise<Pick<Table, "total"> & { headers?: Record<string, string> }>;
}

export const EXPORTS: Pipeline = { open: openExport, describe: describeExport };

/**
 * GET|HEAD /export.<format> (or /aggregate.<format>) once its route's cache had no answer: validated
 * query -> pipeline -> response, handed to the route's keeper as it is made (whole or streaming).
 */
export async function serveExport<Q extends ExportQuery>(
  request: Request,
  query: Q,
  deps: ExportRouteDeps,
  pipeline: Pipeline<Q>,
): Promise<Response> {
  const { config, info } = deps;
  if (deps.refresh) return exportFromCkan(query, () => {}, deps, pipeline);
  if (request.method === "HEAD") {
    // The headers GET would send, from one small call: no Content-Length or ETag, which only the body gives.
    const described = await pipeline.describe(query, config, siteFor(config, deps.upstreamFetch));
    const headers = downloadHeaders(query, described);
    for (const [name, value] of Object.entries(described.headers ?? {})) headers.set(name, value);
    return new Response(null, { status: 200, headers });
  }
  // One client cannot take the isolate: its place is given back once its export ends, however it ends.
  const slot = admitClient(clientOf(request));
  let report: (fields: Record<string, unknown>) => void = () => {};
  const completion = new Promise<Record<string, unknown>>((resolve) => (report = resolve));
  void completion.then(slot.release);
  const response = await exportFromCkan(query, report, deps, pipeline).catch((error: unknown) => {
    slot.release();
    // The request log line says why the isolate refused (a 503 alone could be CKAN's).
    if (error instanceof IsolateBusy)
      info.completion = Promise.resolve({ refused: "isolate busy", error: error.message });
    throw error;
  });
  info.completion = completion;
  return response;
}

async function exportFromCkan<Q extends ExportQuery>(
  query: Q,
  report: (fields: Record<string, unknown>) => void,
  deps: ExportRouteDeps,
  pipeline: Pipeline<Q>,
): Promise<Response> {
  const { config, keep } = deps;
  const site = siteFor(config, deps.upstreamFetch);
  const { client } = site;
  const opened = await pipeline.open(
    query,
    config,
    site,
    (outcome) =>
      report({
        ...(outcome.error ? { status: outcome.error.status } : {}),
        cache: keep.stores ? "MISS" : "OFF",
        rows: outcome.rows,
        pages: client.stats.requests,
        bytes: outcome.bytes,
        upstream_bytes: client.stats.bytes,
        upstream_ms: client.stats.milliseconds,
        ...(outcome.error ? { error: outcome.error.message } : {}),
      }),
    deps.upstreamFetch,
  );
  const headers = downloadHeaders(query, opened.table);
  for (const [name, value] of Object.entries(opened.headers ?? {})) headers.set(name, value);

  const body = await readBody(opened, config.bufferBytes);
  if ("stream" in body) {
    const watch = { stallMs: config.stallSeconds * 1000, minBytesPerSecond: MIN_BYTES_PER_SECOND };
    // The export itself may end whole (the cache's copy read on): the client's own cut is logged apart.
    const clientStopped = (error: HttpError): void =>
      log({ event: "client_stopped", id: deps.info.id, status: error.status, error: error.message }, (text) => text);
    // The cache's reader keeps the export going while the client lags: the client's own branch is
    // timed, so a client that stalls or trickles lets go of what is held for it.
    const sent = keep.streamed(body.stream, body.estimate, headers, opened.progress, (branch) =>
      watchedReader(branch, watch, clientStopped),
    );
    return new Response(freedOnceWritten(sent.stream, { free: !sent.shared }), { status: 200, headers });
  }
  headers.set("content-length", String(body.whole.byteLength));
  headers.set("etag", await contentEtag(body.whole));
  void keep.whole(body.whole, headers);
  return new Response(body.whole, { status: 200, headers });
}
