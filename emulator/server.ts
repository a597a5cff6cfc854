// The CKAN datastore_search emulator on a loopback port, for `npm start`, benchmarks and curl.
//   node scripts/emulator-server.ts [port]
// Env: EMULATOR_PORT (default 8788), EMULATOR_TOKEN (default "demo-token"),
//      EMULATOR_CKAN_VERSION ("2.10" default, or "2.12"),
//      EMULATOR_STALE_TOTAL (2.12: rows missing from the cached count of an unfiltered total).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { createEmulator, type Emulator, type EmulatorOptions } from "./index.ts";

export interface EmulatorServerOptions {
  port?: number;
  token?: string;
  version?: EmulatorOptions["version"];
  staleTotal?: number;
}

export interface EmulatorServer {
  /** Origin without a trailing slash, e.g. http://127.0.0.1:8788 */
  url: string;
  close(): Promise<void>;
}

export async function startEmulatorServer(options: EmulatorServerOptions = {}): Promise<EmulatorServer> {
  const emulator = createEmulator({ token: options.token ?? "demo-token", version: options.version, staleTotal: options.staleTotal });
  const server = createServer((req, res) => {
    handle(emulator, req, res).catch((error: unknown) => {
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
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

async function handle(emulator: Emulator, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const response = await emulator.fetch(await toRequest(req));
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

function parseVersion(value: string | undefined): EmulatorOptions["version"] {
  if (value === undefined || value === "") return undefined;
  if (value === "2.10" || value === "2.12") return value;
  throw new Error(`EMULATOR_CKAN_VERSION must be 2.10 or 2.12, not ${value}`);
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (invokedDirectly) {
  const server = await startEmulatorServer({
    port: Number(process.argv[2] ?? process.env["EMULATOR_PORT"] ?? 8788),
    token: process.env["EMULATOR_TOKEN"] ?? "demo-token",
    version: parseVersion(process.env["EMULATOR_CKAN_VERSION"]),
    staleTotal: Number(process.env["EMULATOR_STALE_TOTAL"] ?? 0),
  });
  console.log(`CKAN emulator listening: ${server.url}/api/action/datastore_search`);
  const stop = (): void => void server.close().then(() => process.exit(0));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
