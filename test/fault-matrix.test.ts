// Issue 25: the fault matrix. The worker driven through an upstream that echoes secrets, redirects,
// stalls, resets mid-page, sends invalid JSON or hostile cells, and through clients that stall or
// trickle. For each: no run of 8 characters of a secret in any answer, header or log line; no error
// kept in the edge cache (the same link afterwards is exported afresh, whole); and another client
// is served meanwhile. A download cut short tells the runtime only that, as a dropped connection
// (DownloadCut, retryable: workerd's HTTP server then adds no `Uncaught exception` report of its own);
// the runtime's own output, its `Uncaught` lines, is read on the wire: test/http/hostile.test.mts.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { harness, isLaterPage, readAll } from "./harness.ts";

const TOKEN = `eyJhbGciOiJIUzI1NiJ9.${"matrixTOKEN-0123456789".repeat(8)}.tail`;
const ADMIN = "matrix-admin-token-31c2d1e0f9";
const SECRETS = [TOKEN, ADMIN];
const ALL = SECRETS.join(" | ");

function leaks(text: string): string[] {
  const found = new Set<string>();
  for (const secret of SECRETS)
    for (let i = 0; i + 8 <= secret.length; i++)
      if (text.includes(secret.slice(i, i + 8))) found.add(secret.slice(i, i + 8));
  return [...found];
}

const never = (): Promise<Response> => new Promise(() => {});

/** A 200 whose body sends the start of an answer, then what `then` does: an error, or nothing ever again. */
function midPage(then: (controller: ReadableStreamDefaultController<Uint8Array>) => void | Promise<void>): Response {
  const start = new TextEncoder().encode('{"help": "", "success": true, "result": {"records": "1,2,3\\n4,');
  let sent = false;
  return new Response(
    new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent) return then(controller);
        sent = true;
        controller.enqueue(start);
      },
    }),
    { headers: { "content-type": "application/json" } },
  );
}

/** A connection reset mid-answer. */
const resetMidPage = (): Response =>
  midPage((controller) => controller.error(new TypeError(`Network connection lost (${ALL})`)));

/** An answer that stops sending, its connection left open. */
const stallMidPage = (): Response => midPage(() => new Promise<void>(() => {}));

/** Hostile cells in CKAN's CSV records: a cell that would close its JSON record, formulas. */
function hostileCells(emulated: Response): Promise<Response> {
  return emulated.json().then((answer) => {
    const result = (answer as { result: { records: unknown; fields: { id: string }[] } }).result;
    // id, amount, ratio, ...: the amount a cell that would close its record, the ratio a formula.
    if (typeof result.records === "string")
      result.records = result.records.replace(/^(\d+),([^,\n]*),([^,\n]*),/gm, '$1,"1,""evil"":true",=1+1,');
    return Response.json(answer);
  });
}

type Upstream = (
  n: number,
  body: Record<string, unknown>,
  emulated: () => Promise<Response>,
) => Promise<Response | undefined> | Response | undefined;

/** Each upstream fault, from the second page on (the first page gave the download its 200). */
const UPSTREAMS: Record<string, Upstream> = {
  "echoes the secrets in a validation error": () =>
    Response.json(
      { help: ALL, success: false, error: { __type: `Validation Error ${ALL}`, [`filters ${ALL}`]: [`near ${ALL}`] } },
      { status: 409 },
    ),
  "echoes the secrets in a 500": () => Response.json({ success: false, error: { message: ALL } }, { status: 500 }),
  redirects: () =>
    new Response(null, { status: 307, headers: { location: `https://elsewhere.example/steal?${TOKEN}` } }),
  stalls: () => never(),
  "resets mid-page": () => resetMidPage(),
  // Nothing for UPSTREAM_TIMEOUT_SECONDS while the page is read: broken off, asked again, the same.
  "stalls mid-page": () => stallMidPage(),
  "sends invalid JSON": () =>
    new Response(`{"success": true, "result": {"fields": [${ALL}`, { headers: { "content-type": "application/json" } }),
  "sends hostile cells": (_, __, emulated) => emulated().then(hostileCells),
};

const LINK = "/export.ndjson?resource=sample&limit=3000";

describe("the fault matrix", () => {
  let logged: string[];
  beforeEach(() => {
    logged = [];
    for (const level of ["log", "info", "warn", "error", "debug"] as const) {
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        logged.push(
          args.map((a) => (a instanceof Error ? `${a.message} ${a.stack} ${String(a.cause)}` : String(a))).join(" "),
        );
      });
    }
  });
  afterEach(() => vi.restoreAllMocks());

  function worker(upstream: Upstream | undefined, env: Record<string, string> = {}) {
    const state = { faulty: true };
    const h = harness({
      emulator: { token: TOKEN },
      env: {
        CKAN_API_TOKEN: TOKEN,
        ADMIN_TOKEN: ADMIN,
        CACHE_TTL_SECONDS: "300",
        BUFFER_BYTES: "0",
        UPSTREAM_RETRIES: "0",
        UPSTREAM_TIMEOUT_SECONDS: "1",
        STALL_SECONDS: "1",
        ...env,
      },
      fault: (n, body) => {
        // The other client's export (limit 5) and every first page are answered by the site.
        if (!state.faulty || upstream === undefined || body.limit === 5 || !isLaterPage(body)) return undefined;
        return upstream(n, body, () =>
          h.emulator.fetch(
            new Request("http://x/api/action/datastore_search", {
              method: "POST",
              headers: { authorization: TOKEN, "content-type": "application/json" },
              body: JSON.stringify(body),
            }),
          ),
        );
      },
    });
    return { ...h, state };
  }

  /**
   * What every case must hold once its download is over. `stored`: what the edge cache may hold of
   * the link afterwards: nothing after an upstream failure; after a client's own failure, the whole
   * export at most (the cache's copy reads on while the client lags).
   */
  async function expectContained(
    h: ReturnType<typeof worker>,
    answers: { text: string; headers: Headers }[],
    {
      stored = "nothing",
      link = LINK,
      rows = 3000,
    }: { stored?: "nothing" | "whole"; link?: string; rows?: number } = {},
  ): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 20));
    for (const { text, headers } of answers) {
      expect(leaks(text)).toEqual([]);
      expect(leaks([...headers].map(([n, v]) => `${n}: ${v}`).join("\n"))).toEqual([]);
    }
    expect(leaks(logged.join("\n"))).toEqual([]);
    await h.settle();
    // Nothing of the failed download was kept: the same link is exported afresh, whole.
    h.state.faulty = false;
    const again = await h.get(link);
    if (stored === "nothing") expect(again.headers.get("x-cache")).toBe("MISS");
    const { text, error } = await readAll(again);
    expect(error).toBeUndefined();
    expect(text.trimEnd().split("\n")).toHaveLength(rows);
  }

  for (const [name, upstream] of Object.entries(UPSTREAMS)) {
    it(`an upstream that ${name}: no secret, nothing cached, another client served`, async () => {
      const h = worker(upstream);
      const faulty = await h.get(LINK, { headers: { "cf-connecting-ip": "192.0.2.1" } });
      const other = await h.get("/export.csv?resource=sample&limit=5", {
        headers: { "cf-connecting-ip": "192.0.2.2" },
      });
      expect(other.status).toBe(200);
      const otherText = await other.text();
      expect(otherText.trimEnd().split("\r\n")).toHaveLength(6);
      const { text, error } = await readAll(faulty);
      if (name === "sends hostile cells") {
        // Read whole: every record parses and has only its columns.
        expect(error).toBeUndefined();
        for (const line of text.trimEnd().split("\n"))
          expect(Object.keys(JSON.parse(line) as object)).not.toContain("evil");
      } else {
        expect(error).toMatchObject({ name: "DownloadCut", retryable: true });
        expect(leaks(`${(error as Error).message} ${(error as Error).stack}`)).toEqual([]);
        expect(text.trimEnd().split("\n").at(-1)).toMatch(/^#EXPORT INCOMPLETE: /);
      }
      // Hostile cells are written safely, not refused: that export is whole, and may be kept.
      await expectContained(
        h,
        [
          { text, headers: faulty.headers },
          { text: otherText, headers: other.headers },
        ],
        { stored: name === "sends hostile cells" ? "whole" : "nothing" },
      );
    });
  }

  it("a client that stalls: stopped, its place freed, nothing cached, another client served", async () => {
    const h = worker(undefined);
    const link = "/export.ndjson?resource=sample&limit=20000";
    const stalled = await h.get(link, { headers: { "cf-connecting-ip": "192.0.2.3" } });
    const reader = stalled.body!.getReader();
    await reader.read();
    const other = await h.get("/export.csv?resource=sample&limit=5", { headers: { "cf-connecting-ip": "192.0.2.4" } });
    expect(other.status).toBe(200);
    const otherText = await other.text();
    // The client gets an error once it comes back: its download was stopped.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const { error } = await readAll(
      new Response(
        new ReadableStream({
          pull: async (c) => {
            const r = await reader.read();
            if (r.done) c.close();
            else c.enqueue(r.value);
          },
        }),
      ),
    );
    expect(error).toMatchObject({ name: "DownloadCut", retryable: true });
    await expectContained(h, [{ text: otherText, headers: other.headers }], { stored: "whole", link, rows: 20000 });
  });

  it("a client that trickles (one small chunk at a time, slower than the minimum rate): stopped, nothing cached", async () => {
    const h = worker(undefined, { PAGE_SIZE: "1" });
    const trickled = await h.get("/export.ndjson?resource=sample&limit=200", {
      headers: { "cf-connecting-ip": "192.0.2.5" },
    });
    const reader = trickled.body!.getReader();
    let text = "";
    const decoder = new TextDecoder();
    let failure: unknown;
    for (let i = 0; i < 40; i++) {
      const read = await reader.read().catch((error: unknown) => ((failure = error), undefined));
      if (read === undefined || read.done) break;
      text += decoder.decode(read.value, { stream: true });
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    // Cut short: the runtime is told only that (the edge cache's copy read on, whole); the log says why.
    expect(failure).toMatchObject({ name: "DownloadCut", retryable: true });
    expect(
      logged.some(
        (line) => line.includes('"event":"client_stopped"') && line.includes("slower than 4096 bytes a second"),
      ),
    ).toBe(true);
    expect(text.trimEnd().split("\n").length).toBeLessThan(200);
    const other = await h.get("/export.csv?resource=sample&limit=5", { headers: { "cf-connecting-ip": "192.0.2.6" } });
    expect(other.status).toBe(200);
    await expectContained(
      h,
      [
        { text, headers: trickled.headers },
        { text: await other.text(), headers: other.headers },
      ],
      { stored: "whole", link: "/export.ndjson?resource=sample&limit=200", rows: 200 },
    );
  });
});
