import { findResource } from "./resources.ts";
import { SqlError, type SqlEngine, type SqlRows } from "./sql-engine.ts";

// The emulator's PostgreSQL over HTTP, for an emulator that runs where PGlite cannot: inside
// workerd (the workers specs), whose runtime refuses the WebAssembly PGlite compiles as it runs.
// A Node process serves its engine with `sqlEngineHandler` (test/sql-engine-setup.ts does, for the
// specs), and the emulator in workerd takes `remoteSqlEngine(url)` as its `sqlEngine`. Only the
// engine crosses: what CKAN does around it (wrapping, allow-list, errors, the answer) stays in the
// emulator, wherever it runs. A loopback tool for specs, never part of the worker.

type Call = { op: "load"; ids: string[]; fullText: boolean } | { op: "query"; sql: string };
type Reply =
  | { rows: SqlRows }
  | { ok: true }
  | { error: { code: string; message: string; position?: number; detail?: string; hint?: string } };

export function remoteSqlEngine(url: string, fetcher: typeof fetch = fetch): SqlEngine {
  const call = async (body: Call): Promise<Reply> => {
    const response = await fetcher(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`the SQL engine at ${url} answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as Reply;
  };
  return {
    async load(resources, fullText) {
      await call({ op: "load", ids: resources.map((resource) => resource.id), fullText });
    },
    async query(sql) {
      const reply = await call({ op: "query", sql });
      if ("error" in reply) throw new SqlError(reply.error);
      if (!("rows" in reply)) throw new Error("the SQL engine's reply holds no rows");
      return reply.rows;
    },
  };
}

/** Serves an engine to `remoteSqlEngine`: one JSON call per POST. */
export function sqlEngineHandler(engine: () => Promise<SqlEngine>): (request: Request) => Promise<Response> {
  return async (request) => {
    const call = (await request.json()) as Call;
    const db = await engine();
    let reply: Reply;
    if (call.op === "load") {
      const resources = call.ids.map((id) => findResource(id)).filter((resource) => resource !== undefined);
      await db.load(resources, call.fullText);
      reply = { ok: true };
    } else {
      try {
        reply = { rows: await db.query(call.sql) };
      } catch (error) {
        if (!(error instanceof SqlError)) throw error;
        reply = {
          error: {
            code: error.code,
            message: error.message,
            position: error.position,
            detail: error.detail,
            hint: error.hint,
          },
        };
      }
    }
    return Response.json(reply);
  };
}
