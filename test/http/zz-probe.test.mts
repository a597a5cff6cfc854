import { it } from "vitest";
import { startEmulatorServer } from "../../emulator/server.ts";
import { getRaw, startWorker } from "./harness.mts";
it("probe", async () => {
  const emulator = await startEmulatorServer({ port: 0, version: "2.10" });
  const w = await startWorker({ vars: { CKAN_BASE_URL: `${emulator.url}/data/en`, BUFFER_BYTES: "0", UPSTREAM_RETRIES: "0", PAGE_SIZE: "200", CACHE_TTL_SECONDS: "0" } });
  emulator.setFault((_, body) => (body.offset !== 200 ? undefined : new Response("upstream broke", { status: 500 })));
  const r = await getRaw(`${w.url}/export.csv?resource=sample&limit=1000&fields=id`);
  const fs = await import("node:fs"); fs.writeFileSync("/tmp/hostile/probe1.txt", r.body.toString().slice(-300));
  await new Promise((res) => setTimeout(res, 1500));
  fs.writeFileSync("/tmp/hostile/probe2.txt", w.output()); const w2 = await startWorker({ vars: { CKAN_BASE_URL: `${emulator.url}/data/en`, BUFFER_BYTES: "0", UPSTREAM_RETRIES: "0", PAGE_SIZE: "200", CACHE_TTL_SECONDS: "300" } }); emulator.setFault((_, body) => (body.offset !== 200 ? undefined : new Response("upstream broke", { status: 500 }))); const r2 = await getRaw(`${w2.url}/export.csv?resource=sample&limit=1000&fields=id`); await new Promise((res) => setTimeout(res, 1500)); fs.writeFileSync("/tmp/hostile/probe3.txt", r2.body.toString().slice(-200) + w2.output()); await w2.stop();
  await w.stop(); await emulator.close();
}, 120000);
