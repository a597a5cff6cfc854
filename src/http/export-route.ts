import type { CkanSite } from "../ckan/site.ts";
import type { Table } from "../ckan/table.ts";
import { admitClient, IsolateBusy } from "../ckan/page-budget.ts";
import { clientOf } from "../security/rate-limit.ts";
import { log } from "../log/log.ts";
import type { HttpError } from "../errors.ts";
import { contentEtag } from "../protocol/conditional.ts";
import type { HttpSinkSettings } from "../config/narrow.ts";
import type { ExportQuery } from "../query/export-query.ts";
import type { ExportProgress, OpenExport } from "../export/pipeline.ts";
import { readBody } from "./buffer.ts";
import { freedOnceWritten } from "./freed-once-written.ts";
import { downloadHeaders } from "./download.ts";
import type { Keep } from "../protocol/keep.ts";
import { MIN_BYTES_PER_SECOND, watchedReader } from "../export/byte-stream.ts";
import type { RequestInfo } from "./request-log.ts";

export interface ExportRouteDeps {
  /** The sink's own settings; the export's other settings are its pipeline's (bound by the route). */
  settings: HttpSinkSettings;
  /** The CKAN site the export reads: its client's figures go on the request's log line. */
  site: CkanSite;
  info: RequestInfo;
  /** Where the answer goes for the cache the route's policy chose (routes/cache-policy.ts). */
  keep: Keep;
  /** A stale cache entry's refresh: the whole export even for a HEAD, and no client's place taken. */
  refresh: boolean;
}

/**
 * What a download route computes, between its link and its bytes, with its own settings bound by the
 * route: exports (rows from CKAN) and aggregates (groups computed from them) share everything else
 * here (headers, the body read whole or streamed, the keeper, the client's place).
 */
export interface Pipeline<Q extends ExportQuery = ExportQuery> {
  open(query: Q, site: CkanSite, onDone: (progress: ExportProgress) => void): Promise<OpenExport>;
  /** The headers GET would send, without the body (for HEAD). */
  describe(query: Q, site: CkanSite): Promise<Pick<Table, "total"> & { headers?: Record<string, string> }>;
}

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
  const { info } = deps;
  if (request.method === "HEAD" && !deps.refresh) {
    // The headers GET would send, from one small call: no Content-Length or ETag, which only the body gives.
    const described = await pipeline.describe(query, deps.site);
    return new Response(null, { status: 200, headers: downloadHeaders(query, described) });
  }
  // One client cannot take the isolate: its place is given back once its export ends, however it
  // ends. A refresh takes none: nobody waits on it.
  const slot = deps.refresh ? { release: () => {} } : admitClient(clientOf(request));
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
  const { settings, keep, site } = deps;
  const { client } = site;
  const opened = await pipeline.open(query, site, (outcome) =>
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
  );
  const headers = downloadHeaders(query, { total: opened.table.total, headers: opened.headers });

  const body = await readBody(opened, settings.bufferBytes);
  if ("stream" in body) {
    const watch = { stallMs: settings.stallSeconds * 1000, minBytesPerSecond: MIN_BYTES_PER_SECOND };
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
  const error = opened.progress.error;
  if (error !== undefined) {
    // It ended early, its last row saying why: an answer that reports a failure, kept by no cache.
    keep.failed();
    headers.set("x-export-error", String(error.status));
    return new Response(body.whole, { status: 200, headers });
  }
  headers.set("etag", await contentEtag(body.whole));
  void keep.whole(body.whole, headers);
  return new Response(body.whole, { status: 200, headers });
}
