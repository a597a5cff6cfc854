import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env as testEnv } from "cloudflare:workers";
import { inject } from "vitest";
import { createApp } from "../src/app.ts";
import { createEmulator, EMULATOR_RESOURCES, type EmulatorOptions } from "../emulator/index.ts";
import { remoteSqlEngine } from "../emulator/sql-remote.ts";
import type { Env } from "../src/config/env.ts";
import type { RunResult } from "../src/snapshot/procedure.ts";
import { setActiveWorker } from "./active-worker.ts";

/** Recognisable, so a test can prove it never leaves the worker. */
export const TOKEN = "tok-SECRET-4f1d9a7e";

export interface UpstreamCall {
  url: string;
  method: string;
  authorization: string | null;
  body: Record<string, unknown>;
  signal: AbortSignal;
  /** How the worker asked for redirects to be handled ("manual": never followed). */
  redirect: string;
}

export interface HarnessOptions {
  env?: Partial<Env>;
  emulator?: EmulatorOptions;
  /**
   * Let the worker meet the site once before the test (default true), as it has in every isolate but
   * a new one: it then knows whether the site pages by keyset, and asks only one way.
   */
  warm?: boolean;
  /** Answer upstream call number `n` (1-based) yourself; undefined lets the emulator answer. */
  fault?: (n: number, body: Record<string, unknown>) => Response | undefined | Promise<Response | undefined>;
}

let sites = 0;

/**
 * The worker wired to the CKAN emulator through an injected fetch, with a small page size so a few
 * thousand rows already cross many pages. Each harness gets its own site URL: what the worker
 * learns about one site (keyset support) must not leak into another test.
 */
export function harness(options: HarnessOptions = {}) {
  // CKAN 2.10 unless a spec says otherwise: what the specs were written against, whatever the demo runs.
  // `emulator: { sql: true }`: datastore_search_sql on, its PostgreSQL the one Node serves the specs
  // (test/http/sql-engine-server.mts), since PGlite cannot run inside workerd.
  const sqlEngine = async () => remoteSqlEngine(inject("sqlEngineUrl"));
  const emulator = createEmulator({ token: TOKEN, version: "2.10", sqlEngine, ...options.emulator });
  const calls: UpstreamCall[] = [];
  let warming = false;
  const upstreamFetch = async (request: Request): Promise<Response> => {
    if (warming) return emulator.fetch(request);
    // datastore_search is a POST with a JSON body; resource_show a GET with none.
    const body = request.method === "POST" ? ((await request.clone().json()) as Record<string, unknown>) : {};
    calls.push({
      url: request.url,
      method: request.method,
      authorization: request.headers.get("authorization"),
      body,
      signal: request.signal,
      redirect: request.redirect,
    });
    const faulty = await options.fault?.(calls.length, body);
    return faulty ?? emulator.fetch(request);
  };
  const app = createApp({ upstreamFetch });
  const env: Env = {
    CKAN_BASE_URL: `http://ckan-${++sites}.test/data/en`,
    CKAN_API_TOKEN: TOKEN,
    RESOURCES: JSON.stringify(EMULATOR_RESOURCES),
    PAGE_SIZE: "1000",
    UPSTREAM_RETRY_BASE_MS: "1",
    // The edge cache is shared by every test in a file: only the cache specs turn it on.
    CACHE_TTL_SECONDS: "0",
    SNAPSHOTS: (testEnv as { SNAPSHOTS: R2Bucket }).SNAPSHOTS,
    ...options.env,
  };
  // Snapshot runs (Workflow instances) run as this worker: same emulator, faults and settings.
  setActiveWorker({ env, upstreamFetch });
  const contexts: ExecutionContext[] = [];
  let warm: Promise<void> | undefined =
    options.warm === false
      ? undefined
      : (async () => {
          warming = true;
          const probeEnv = { ...env, CACHE_TTL_SECONDS: "0", LINK_SIGNING_KEY: undefined, RATE_LIMITER: undefined };
          await (
            await app.fetch(
              new Request("http://worker.test/export.csv?resource=sample&limit=1"),
              probeEnv,
              createExecutionContext(),
            )
          ).text();
          warming = false;
        })();
  const get = async (path: string, init?: RequestInit): Promise<Response> => {
    await warm;
    warm = undefined;
    const ctx = createExecutionContext();
    contexts.push(ctx);
    // A path on the worker's usual test origin, or a whole URL (a spec that needs another origin).
    return app.fetch(new Request(path.startsWith("http") ? path : `http://worker.test${path}`, init), env, ctx);
  };
  /** Waits for work handed to ctx.waitUntil (a cache fill) by the requests so far. */
  const settle = async (): Promise<void> => {
    for (const ctx of contexts.splice(0)) await waitOnExecutionContext(ctx);
  };
  const scheduled = async (cron: string, time: number) => {
    await warm;
    warm = undefined;
    // Without SNAPSHOT_RUNS in its env (the Workflow specs bind it themselves) the cron runs the jobs inline.
    return (await app.scheduled(cron, time, env)) as RunResult[];
  };
  return { get, settle, scheduled, calls, emulator, env };
}

/** Reads a body to the end, keeping what arrived before an error. */
export async function readAll(response: Response): Promise<{ text: string; error: unknown }> {
  if (response.body === null) return { text: "", error: undefined };
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text: text + decoder.decode(), error: undefined };
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    return { text: text + decoder.decode(), error };
  }
}

/**
 * A JSON body read with every number kept as its source text (JSON.parse's source access), so a
 * spec can compare exact digits: `12345678901234567890.10` stays that, not a rounded double.
 */
export function exactJson(text: string): unknown {
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) =>
    typeof value === "number" ? new ExactNumber(context?.source ?? String(value)) : value,
  );
}

export class ExactNumber {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** A JSON value as the CSV export's rule writes it (see README, "Values are exact"). */
export function asCsvText(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (value instanceof ExactNumber) return value.text;
  if (typeof value === "string") return value;
  return JSON.stringify(value, (_key, v: unknown) => (v instanceof ExactNumber ? Number(v.text) : v));
}

/** The probe for the largest `_id` (CKAN 2.12, `_id` order): one small call beside the pages. */
export const isProbe = (body: Record<string, unknown>): boolean => body.sort === "_id desc" && body.limit === 1;

/** A page after an export's first: asked at an offset, or by `_id` (a range, or a list before CKAN 2.12). */
export const isLaterPage = (body: Record<string, unknown>): boolean =>
  !isProbe(body) &&
  ((typeof body.offset === "number" && body.offset > 0) ||
    (typeof body.filters === "object" && body.filters !== null && "_id" in body.filters));

/** The upstream calls that fetched pages (the probe left out). */
export const pageCalls = (calls: UpstreamCall[]): UpstreamCall[] => calls.filter((c) => !isProbe(c.body));

declare module "vitest" {
  /** What the workers specs' global setup provides (test/http/sql-engine-server.mts). */
  export interface ProvidedContext {
    sqlEngineUrl: string;
  }
}
