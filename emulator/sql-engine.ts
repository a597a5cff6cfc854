import type { Resource } from "./resources.ts";
import { csvBatches } from "./sql-csv.ts";
import {
  copyStatement,
  createTable,
  fillFullText,
  NESTED_TYPE,
  quoteIdent,
  TABLE_METADATA_VIEW,
} from "./sql-tables.ts";

// The PostgreSQL behind datastore_search_sql: PGlite (PostgreSQL compiled to WebAssembly), started
// on the first SQL query, with each resource's table loaded the first time a statement names it
// (a million rows take seconds, and most runs never ask). Values come back as PostgreSQL's own
// text, never through a JavaScript number, so the answer can write them as CKAN's Python does.
//
// PGlite runs in Node. It cannot run inside workerd: its runtime builds small WebAssembly modules
// on the fly (Emscripten's addFunction), which workerd refuses ("Wasm code generation disallowed
// by embedder"). The module is imported only when a query arrives, so nothing of it reaches a
// worker bundle or a spec that does not ask for SQL.

export interface SqlColumn {
  readonly name: string;
  /** pg_type.typname: int8, numeric, float8, text, timestamp, nested, _text… */
  readonly type: string;
}

/** A value as PostgreSQL writes it (its output function), null for NULL; an array's elements one by one. */
export type SqlCell = string | null | readonly SqlCell[];

export interface SqlRows {
  readonly columns: readonly SqlColumn[];
  readonly rows: readonly (readonly SqlCell[])[];
}

/** PostgreSQL's error report, as libpq hands it to psycopg2. */
export class SqlError extends Error {
  readonly code: string;
  /** 1-based character position in the statement, where PostgreSQL names one. */
  readonly position: number | undefined;
  readonly detail: string | undefined;
  readonly hint: string | undefined;
  constructor(report: { code: string; message: string; position?: number; detail?: string; hint?: string }) {
    super(report.message);
    this.code = report.code;
    this.position = report.position;
    this.detail = report.detail;
    this.hint = report.hint;
  }
}

export interface SqlEngine {
  /**
   * Loads the tables of these resources (and their aliases' views) unless loaded already;
   * `fullText`: with `_full_text` filled in.
   */
  load(resources: readonly Resource[], fullText: boolean): Promise<void>;
  /** Runs one statement. Throws SqlError for what PostgreSQL refuses. */
  query(sql: string): Promise<SqlRows>;
}

export type SqlEngineFactory = () => Promise<SqlEngine>;

interface PgliteLike {
  query<T>(
    sql: string,
    params?: unknown[],
    options?: Record<string, unknown>,
  ): Promise<{ rows: T[]; fields: { name: string; dataTypeID: number }[] }>;
  exec(sql: string): Promise<unknown>;
}

/** Every type's text as PostgreSQL wrote it: PGlite's parsers would turn int8 and float8 into doubles. */
function asText(types: Record<string, unknown>): Record<number, (text: string) => string> {
  const parsers: Record<number, (text: string) => string> = {};
  for (const oid of Object.values(types)) if (typeof oid === "number") parsers[oid] = (text) => text;
  return parsers;
}

export const startPglite: SqlEngineFactory = async () => {
  // A variable specifier: bundlers and the workers' module loader leave it alone until it runs.
  const specifier = "@electric-sql/pglite";
  const { PGlite, types } = (await import(/* @vite-ignore */ specifier)) as {
    PGlite: { create(options: Record<string, unknown>): Promise<PgliteLike> };
    types: Record<string, unknown>;
  };
  const db = await PGlite.create({ parsers: asText(types), relaxedDurability: true }).catch((error: unknown) => {
    if (!(error instanceof WebAssembly.CompileError)) throw error;
    throw new Error(
      `PGlite cannot run here (${error.message}): give the emulator a sqlEngine, remoteSqlEngine(url) as test/harness.ts does`,
    );
  });
  await db.exec(
    `${NESTED_TYPE}; SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY'; SET default_text_search_config = 'pg_catalog.english'`,
  );
  // CKAN's view of its tables reads pg_class: a statement naming it is refused as a system table's reader.
  await db.exec(TABLE_METADATA_VIEW);
  const typeNames = new Map<number, string>();
  const loading = new Map<string, Promise<void>>();

  async function loadOne(resource: Resource): Promise<void> {
    const { id, table } = resource;
    await db.exec(createTable(id, table));
    const copy = copyStatement(id, table);
    for await (const blob of csvBatches(resource)) await db.query(copy, [], { blob });
    // The key after the rows: one index build instead of a million insertions into it.
    await db.exec(`ALTER TABLE ${quoteIdent(id)} ADD PRIMARY KEY ("_id"); ANALYZE ${quoteIdent(id)}`);
    for (const alias of resource.aliases)
      await db.exec(`CREATE VIEW ${quoteIdent(alias)} AS SELECT * FROM ${quoteIdent(id)}`);
  }

  /** `_full_text` costs as much again as the load: it is written the first time a statement names it. */
  async function fillText(resource: Resource): Promise<void> {
    await db.exec(`${fillFullText(resource.id, resource.table)}; ANALYZE ${quoteIdent(resource.id)}`);
  }

  function once(key: string, work: () => Promise<void>): Promise<void> {
    let done = loading.get(key);
    if (done === undefined) {
      done = work();
      loading.set(key, done);
    }
    return done;
  }

  async function typeName(oid: number): Promise<string> {
    const known = typeNames.get(oid);
    if (known !== undefined) return known;
    const { rows } = await db.query<{ typname: string }>(`SELECT typname FROM pg_type WHERE oid = ${oid}`);
    const name = rows[0]?.typname ?? "unknown";
    typeNames.set(oid, name);
    return name;
  }

  return {
    async load(resources, fullText) {
      for (const resource of resources) {
        await once(resource.id, () => loadOne(resource));
        if (fullText) await once(`${resource.id} _full_text`, () => fillText(resource));
      }
    },
    async query(sql) {
      let result: Awaited<ReturnType<PgliteLike["query"]>>;
      try {
        result = await db.query<SqlCell[]>(sql, [], { rowMode: "array" });
      } catch (error) {
        throw toSqlError(error);
      }
      const columns: SqlColumn[] = [];
      for (const field of result.fields) columns.push({ name: field.name, type: await typeName(field.dataTypeID) });
      return { columns, rows: result.rows as SqlCell[][] };
    },
  };
};

function toSqlError(error: unknown): unknown {
  if (typeof error !== "object" || error === null || typeof (error as { code?: unknown }).code !== "string")
    return error;
  const report = error as { code: string; message: string; position?: string | number; detail?: string; hint?: string };
  const position = report.position === undefined ? undefined : Number(report.position);
  return new SqlError({
    code: report.code,
    message: report.message,
    position,
    detail: report.detail,
    hint: report.hint,
  });
}
