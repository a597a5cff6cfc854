// Vitest global setup of the workers specs: the emulator's PostgreSQL (PGlite) served on loopback
// to the emulator running inside workerd, where PGlite cannot run (emulator/sql-remote.ts). PGlite
// starts only when a spec first sends SQL; test/harness.ts hands the URL to the emulator it builds.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";
import { startPglite } from "../../emulator/sql-engine.ts";
import { sqlEngineHandler } from "../../emulator/sql-remote.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let engine: ReturnType<typeof startPglite> | undefined;
  const handle = sqlEngineHandler(() => (engine ??= startPglite()));
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      handle(new Request("http://engine/", { method: "POST", body: Buffer.concat(chunks) }))
        .then(async (response) => {
          res.writeHead(response.status, { "content-type": "application/json" });
          res.end(Buffer.from(await response.arrayBuffer()));
        })
        .catch((error: unknown) => {
          res.writeHead(500, { "content-type": "text/plain" });
          res.end(error instanceof Error ? error.message : String(error));
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  project.provide("sqlEngineUrl", `http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}

declare module "vitest" {
  export interface ProvidedContext {
    sqlEngineUrl: string;
  }
}
