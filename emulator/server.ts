// The CKAN datastore_search emulator on a loopback port, for `npm start`, benchmarks and curl.
//   node emulator/server.ts [port]
// It answers CKAN's API only under its site base (`/data/en/api/action/…` or `/data/en/api/3/action/…`
// by default), as a CKAN mounted there does: any other path is CKAN's HTML 404 page, so a CKAN
// address with a segment missing or too many fails here as it would against the real site.
// Env: EMULATOR_PORT (default 8788), EMULATOR_TOKEN (default "demo-token"), EMULATOR_BASE_PATH (default /data/en),
//      EMULATOR_CKAN_VERSION ("2.12" default, as in npm start; or "2.10", "2.11"),
//      EMULATOR_STALE_TOTAL (2.12: rows missing from the cached count of an unfiltered total),
//      EMULATOR_SQL ("on": datastore_search_sql answered by PGlite; "off", the default).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { CKAN_VERSIONS, createEmulator, type CkanVersion, type Emulator, type EmulatorOptions } from "./index.ts";

/**
 * Fault injection for specs, like the in-process harness's `fault`: called for every
 * datastore_search request with its number `n` (1-based, counted since the fault was set) and its
 * parameters (the JSON body, or the query string of a GET). A Response is sent instead of the
 * emulator's answer, "destroy" drops the connection without an answer, undefined lets the emulator
 * answer. Nothing a worker sends can turn it on: only the process that starts the server.
 */
export type EmulatorFault = (n: number, body: Record<string, unknown>) => Response | "destroy" | undefined;

export interface EmulatorServerOptions {
  port?: number;
  token?: string;
  version?: EmulatorOptions["version"];
  staleTotal?: number;
  /** false: a CKAN without the datastore plugin. */
  datastore?: boolean;
  /** true: datastore_search_sql on (ckan.datastore.sqlsearch.enabled). */
  sql?: boolean;
  fault?: EmulatorFault;
  /** The site's mount prefix and language segment (default "/data/en"; "" for a CKAN at the root). */
  basePath?: string;
}

export interface EmulatorServer {
  /** Origin without a trailing slash, e.g. http://127.0.0.1:8788 */
  url: string;
  /** The CKAN site base (CKAN_BASE_URL), e.g. http://127.0.0.1:8788/data/en */
  base: string;
  /** Replaces the fault (undefined: none) and restarts its count. */
  setFault(fault: EmulatorFault | undefined): void;
  close(): Promise<void>;
}

interface FaultState {
  fault: EmulatorFault | undefined;
  calls: number;
}

export async function startEmulatorServer(options: EmulatorServerOptions = {}): Promise<EmulatorServer> {
  const emulator = createEmulator({
    token: options.token ?? "demo-token",
    version: options.version,
    staleTotal: options.staleTotal,
    datastore: options.datastore,
    sql: options.sql,
    sqlLog: (line) => console.log(line),
  });
  const faults: FaultState = { fault: options.fault, calls: 0 };
  const basePath = (options.basePath ?? "/data/en").replace(/\/+$/, "");
  const server = createServer((req, res) => {
    handle(emulator, faults, basePath, req, res).catch((error: unknown) => {
      console.error("emulator:", error);
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json;charset=utf-8" });
      res.end(res.headersSent ? undefined : JSON.stringify("Internal Server Error"));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 8788, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    base: `http://127.0.0.1:${port}${basePath}`,
    setFault: (fault) => {
      faults.fault = fault;
      faults.calls = 0;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

const literal = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * What a CKAN answers for a path it has no route for: its HTML error page with a 404 (the shape of
 * the recorded HTML error pages: text/html, a whole page titled with the code), never JSON.
 */
function htmlNotFound(res: ServerResponse): void {
  res.writeHead(404, { "content-type": "text/html; charset=utf-8" });
  res.end(
    '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>Error [404] - CKAN</title></head>\n<body><main><h1>404 Not Found</h1><p>The requested URL was not found on the server.</p></main></body>\n</html>\n',
  );
}

async function handle(
  emulator: Emulator,
  faults: FaultState,
  basePath: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const path = new URL(req.url ?? "/", "http://emulator").pathname;
  if (!new RegExp(`^${literal(basePath)}/api(?:/3)?/action/[^/]+/?$`).test(path)) {
    req.resume();
    htmlNotFound(res);
    return;
  }
  const request = await toRequest(req);
  const injected = await injectedFault(faults, request);
  if (injected === "destroy") {
    res.destroy();
    return;
  }
  const response = injected ?? (await emulator.fetch(request));
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  res.writeHead(response.status, headers);
  if (response.body === null || req.method === "HEAD") {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  // A client that hangs up stops the emulator producing the rest of the page.
  res.once("close", () => void reader.cancel().catch(() => {}));
  for (;;) {
    const { done, value } = await reader.read();
    if (done || res.destroyed) break;
    // Respect backpressure: a slow client must not make the whole page pile up in memory.
    if (!res.write(value)) await drained(res);
  }
  res.end();
}

async function injectedFault(faults: FaultState, request: Request): Promise<Response | "destroy" | undefined> {
  const { fault } = faults;
  if (fault === undefined || !new URL(request.url).pathname.endsWith("/datastore_search")) return undefined;
  let body: Record<string, unknown> = Object.fromEntries(new URL(request.url).searchParams);
  if (request.method === "POST") {
    try {
      body = (await request.clone().json()) as Record<string, unknown>;
    } catch {
      // Not JSON: the emulator answers it as CKAN would; the fault sees no parameters.
    }
  }
  return fault(++faults.calls, body);
}

/** Resolves when the socket can take more, or when the client has gone (so the loop can stop). */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.once("drain", done);
    res.once("close", done);
  });
}

async function toRequest(req: IncomingMessage): Promise<Request> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === "string") headers.set(name, value);
    else if (Array.isArray(value)) for (const item of value) headers.append(name, item);
  }
  const method = req.method ?? "GET";
  const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "127.0.0.1"}`);
  if (method === "GET" || method === "HEAD") return new Request(url, { method, headers });
  // Request bodies are small JSON objects; reading them whole keeps the conversion simple.
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new Request(url, { method, headers, body: Buffer.concat(chunks) });
}

export function parseSqlSwitch(value: string | undefined, what: string): boolean {
  if (value === undefined || value === "" || value === "off") return false;
  if (value === "on") return true;
  throw new Error(`${what} must be on or off, not ${value}`);
}

function parseVersion(value: string | undefined): CkanVersion {
  if (value === undefined || value === "") return "2.12";
  const version = CKAN_VERSIONS.find((v) => v === value);
  if (version === undefined)
    throw new Error(`EMULATOR_CKAN_VERSION must be one of ${CKAN_VERSIONS.join(", ")}, not ${value}`);
  return version;
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (invokedDirectly) {
  const server = await startEmulatorServer({
    port: Number(process.argv[2] ?? process.env["EMULATOR_PORT"] ?? 8788),
    token: process.env["EMULATOR_TOKEN"] ?? "demo-token",
    version: parseVersion(process.env["EMULATOR_CKAN_VERSION"]),
    staleTotal: Number(process.env["EMULATOR_STALE_TOTAL"] ?? 0),
    basePath: process.env["EMULATOR_BASE_PATH"],
    sql: parseSqlSwitch(process.env["EMULATOR_SQL"], "EMULATOR_SQL"),
  });
  console.log(`CKAN emulator listening: ${server.base}/api/action/datastore_search`);
  const stop = (): void => void server.close().then(() => process.exit(0));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
