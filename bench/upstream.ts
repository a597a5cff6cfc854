// A synthetic CKAN 2.10 `datastore_search` for the benchmark: fast enough that the worker, not the
// upstream, is what gets measured. Rows are generated once; a lists (or csv) page of all columns is
// then a slice of one pre-serialised buffer, so serving costs no CPU. Other shapes (objects, a
// `fields` list) are serialised on first request and kept per request shape, which is why the
// benchmark runs every export once, unmeasured, before measuring.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export const RESOURCE_ID = "be4c0000-0000-4000-8000-00000000be4c";
const ROWS_MAX = 32000;
const SHAPE_CACHE_BUDGET = 1024 * 1024 * 1024;

export const FIELDS: readonly { id: string; type: string }[] = [
  { id: "_id", type: "int" },
  { id: "record_no", type: "int" },
  { id: "amount", type: "numeric" },
  { id: "ratio", type: "float8" },
  { id: "name", type: "text" },
  { id: "category", type: "text" },
  { id: "created", type: "timestamp" },
  { id: "active", type: "bool" },
  { id: "quantity", type: "int" },
  { id: "score", type: "float8" },
  { id: "city", type: "text" },
  { id: "note", type: "text" },
  { id: "updated", type: "timestamp" },
];

const NAMES = ['Café "Le Zinc", Montréal', "Smith, John", "=SUM(A1:A9)", "Ωmega – Δelta", "plain name", "東京タワー", "-12 apples", "O'Brien & Sons"];
const CATEGORIES = ["alpha", "beta", "gamma", "delta"];
const CITIES = ["Zürich", "São Paulo", "Kraków", "Montréal", "Reykjavík", "東京", "Αθήνα", "Québec"];
const EPOCH = Date.UTC(2020, 0, 1);

/** A cheap integer hash, so every value is a pure function of the row number. */
function mix(n: number): number {
  let h = Math.imul(n ^ 0x9e3779b9, 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const stamp = (ms: number): string => new Date(ms).toISOString().slice(0, 19);

/** Row `id` (1-based, = `_id`) as CKAN returns it in lists form. */
export function rowValues(id: number): unknown[] {
  const h = mix(id);
  const g = mix(h);
  return [
    id,
    100000 + id,
    ((h % 2_000_000) - 500_000) / 100,
    g / 4294967296,
    `${NAMES[h % NAMES.length]} #${id}`,
    CATEGORIES[g % CATEGORIES.length],
    stamp(EPOCH + id * 37_000),
    (h & 1) === 1,
    h % 10 === 0 ? null : h % 1000,
    g % 7 === 0 ? null : Math.round((h % 100000) * 1000 / 997) / 1000,
    CITIES[(h >>> 3) % CITIES.length],
    h % 3 === 0 ? null : `Note ${id}: "quoted", with commas, ümlauts and a ½`,
    g % 5 === 0 ? null : stamp(EPOCH + id * 41_000 + (g % 86400) * 1000),
  ];
}

export interface UpstreamStats {
  requests: number;
  bytes: number;
  /** Pages serialised on demand, not served from memory: while measuring this should stay 0. */
  generated: number;
  /** Pages answered per records_format. */
  formats: Record<string, number>;
  /** Each request's parameters (resource_id left out) and status, for telling where requests go. */
  log: string[];
}

export interface Upstream {
  /** Base URL to give the worker as CKAN_BASE_URL. */
  url: string;
  rows: number;
  /** Delay before every answer, in ms: stands in for a distant CKAN. */
  latencyMs: number;
  stats: UpstreamStats;
  resetStats(): UpstreamStats;
  close(): Promise<void>;
}

interface Page {
  head: Buffer;
  body: Buffer;
  tail: Buffer;
}

class CkanError extends Error {
  readonly status: number;
  readonly error: Record<string, unknown>;
  constructor(status: number, error: Record<string, unknown>) {
    super(String(error.__type));
    this.status = status;
    this.error = error;
  }
}
const validation = (fields: Record<string, unknown>): CkanError => new CkanError(409, { __type: "Validation Error", ...fields });

// The 2.10 parameter schema: anything else is an "extra", which is how 2.10 rejects include_next_page.
const KNOWN = new Set(["resource_id", "id", "q", "filters", "limit", "offset", "fields", "sort", "records_format", "include_total", "distinct", "plain", "language", "full_text", "total_estimation_threshold"]);

/** A pre-serialised records format: every row back to back, and where each starts. */
interface Serialised {
  bytes: Buffer;
  starts: Float64Array;
  /** Bytes of separator after the last row of a slice to drop (the comma between lists). */
  trim: number;
}

/** PostgreSQL COPY text, as CKAN sends records_format=csv: no header, LF rows, t/f, NULL as nothing. */
function copyRow(values: unknown[]): string {
  const cells = values.map((v) => {
    if (v === null) return "";
    if (typeof v === "boolean") return v ? "t" : "f";
    const text = String(v);
    return text === "" || /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  });
  return `${cells.join(",")}\n`;
}

const ENCODINGS = {
  lists: { row: (v: unknown[]) => `${JSON.stringify(v)},`, trim: 1 },
  // The CSV text is the inside of one JSON string.
  csv: { row: (v: unknown[]) => JSON.stringify(copyRow(v)).slice(1, -1), trim: 0 },
};

function pregenerate(rows: number, format: keyof typeof ENCODINGS): Serialised {
  const { row, trim } = ENCODINGS[format];
  const starts = new Float64Array(rows + 1);
  const chunks: Buffer[] = [];
  let at = 0;
  for (let first = 1; first <= rows; first += 10_000) {
    let text = "";
    for (let id = first; id < Math.min(first + 10_000, rows + 1); id++) {
      const encoded = row(rowValues(id));
      starts[id - 1] = at;
      at += Buffer.byteLength(encoded);
      text += encoded;
    }
    chunks.push(Buffer.from(text));
  }
  starts[rows] = at;
  return { bytes: Buffer.concat(chunks, at), starts, trim };
}

function integer(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  const n = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0) throw validation({ [name]: ["Invalid integer"] });
  return n;
}

export async function startUpstream(options: { rows: number; latencyMs?: number }): Promise<Upstream> {
  const { rows } = options;
  // Both formats the worker may ask for (it asks lists, or csv for CSV exports where it passes CKAN's text on).
  const ready: Record<string, Serialised> = { lists: pregenerate(rows, "lists"), csv: pregenerate(rows, "csv") };
  const shapes = new Map<string, Buffer>();
  let cached = 0;
  const stats: UpstreamStats = { requests: 0, bytes: 0, generated: 0, formats: {}, log: [] };
  let origin = "";

  function page(params: Record<string, unknown>): Page {
    const resourceId = params.resource_id ?? params.id;
    if (resourceId === undefined) throw validation({ resource_id: ["Missing value"] });
    if (resourceId !== RESOURCE_ID) {
      throw new CkanError(404, { __type: "Not Found Error", message: `Not found: Resource "${String(resourceId)}" was not found.` });
    }
    const limit = Math.min(integer("limit", params.limit, 100), ROWS_MAX);
    const offset = integer("offset", params.offset, 0);
    const format = params.records_format ?? "objects";
    if (format !== "objects" && format !== "lists" && format !== "csv") throw validation({ records_format: ["Value must be one of ['objects', 'lists', 'csv']"] });
    if (params.sort !== undefined && !/^\s*"?_id"?(\s+asc)?\s*$/i.test(String(params.sort))) {
      throw validation({ sort: [`the bench upstream sorts by _id only`] });
    }
    const empty = (v: unknown): boolean => v === undefined || v === "" || (typeof v === "object" && v !== null && Object.keys(v).length === 0);
    if (!empty(params.q) || !empty(params.filters)) throw validation({ q: ["the bench upstream does not search or filter"] });
    const names = params.fields === undefined ? undefined : Array.isArray(params.fields) ? params.fields.map(String) : String(params.fields).split(",").map((s) => s.trim());
    const columns = names === undefined ? FIELDS.map((_, i) => i) : names.map((name) => {
      const i = FIELDS.findIndex((f) => f.id === name);
      if (i < 0) throw validation({ fields: [`invalid value "${name}"`] });
      return i;
    });
    const includeTotal = params.include_total === true || params.include_total === "true";

    const first = Math.min(offset, rows);
    const end = Math.min(offset + limit, rows);
    const meta: Record<string, unknown> = { include_total: includeTotal, limit, offset, records_format: format, resource_id: RESOURCE_ID, sort: "_id", total_estimation_threshold: null };
    const fields = columns.map((i) => FIELDS[i]);
    const [open, close] = format === "csv" ? ['"', '"'] : ["[", "]"];
    const head = Buffer.from(`{"help": "${origin}/api/3/action/help_show?name=datastore_search", "success": true, "result": ${JSON.stringify({ fields, ...meta }).slice(0, -1)}, "records": ${open}`);
    const links = { start: "/api/action/datastore_search", next: `/api/action/datastore_search?offset=${offset + limit}` };
    const tail = Buffer.from(`${close}, "_links": ${JSON.stringify(links)}${includeTotal ? `, "total": ${rows}, "total_was_estimated": false` : ""}}}`);
    stats.formats[String(format)] = (stats.formats[String(format)] ?? 0) + 1;

    const serialised = names === undefined ? ready[String(format)] : undefined;
    if (serialised !== undefined) {
      const body = end > first ? serialised.bytes.subarray(serialised.starts[first], serialised.starts[end]! - serialised.trim) : Buffer.alloc(0);
      return { head, body, tail };
    }
    const key = JSON.stringify([first, end, format, columns]);
    let body = shapes.get(key);
    if (body === undefined) {
      stats.generated++;
      const out: string[] = [];
      for (let id = first + 1; id <= end; id++) {
        const values = rowValues(id);
        if (format === "lists") out.push(JSON.stringify(columns.map((i) => values[i])));
        else if (format === "csv") out.push(JSON.stringify(copyRow(columns.map((i) => values[i]))).slice(1, -1));
        else out.push(JSON.stringify(Object.fromEntries(columns.map((i) => [FIELDS[i]!.id, values[i]]))));
      }
      body = Buffer.from(out.join(format === "csv" ? "" : ","));
      if (cached + body.length <= SHAPE_CACHE_BUDGET) {
        shapes.set(key, body);
        cached += body.length;
      }
    }
    return { head, body, tail };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    stats.requests++;
    if (upstream.latencyMs > 0) await new Promise((r) => setTimeout(r, upstream.latencyMs));
    const help = `${origin}/api/3/action/help_show?name=datastore_search`;
    let summary = `${req.method} ${req.url}`;
    const send = (status: number, parts: Buffer[]): void => {
      const length = parts.reduce((n, p) => n + p.length, 0);
      stats.bytes += length;
      if (stats.log.length < 200) stats.log.push(`${status} ${summary}`);
      res.writeHead(status, { "content-type": "application/json;charset=utf-8", "content-length": length });
      for (const part of parts.slice(0, -1)) res.write(part);
      res.end(parts.at(-1));
    };
    if (!req.url?.endsWith("/api/action/datastore_search") || req.method !== "POST") {
      send(404, [Buffer.from(JSON.stringify({ help, success: false, error: { __type: "Not Found Error", message: "Not found" } }))]);
      return;
    }
    try {
      let params: unknown;
      try {
        params = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      } catch {
        throw new CkanError(400, { __type: "Bad request", message: "Bad request - JSON Error: Invalid request body" });
      }
      if (params === null || typeof params !== "object" || Array.isArray(params)) throw new CkanError(400, { __type: "Bad request", message: "Bad request - JSON Error: Request data must be a JSON object" });
      const { resource_id: _, ...shown } = params as Record<string, unknown>;
      summary = JSON.stringify(shown);
      const extra = Object.keys(params).find((k) => !KNOWN.has(k));
      if (extra !== undefined) throw validation({ __extras: [`invalid value "${extra}"`] });
      const { head, body, tail } = page(params as Record<string, unknown>);
      send(200, [head, body, tail]);
    } catch (error) {
      if (!(error instanceof CkanError)) throw error;
      send(error.status, [Buffer.from(JSON.stringify({ help, success: false, error: error.error }))]);
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      console.error("bench upstream:", error);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const upstream: Upstream = {
    url: origin,
    rows,
    latencyMs: options.latencyMs ?? 0,
    stats,
    resetStats() {
      const before = { ...stats };
      Object.assign(stats, { requests: 0, bytes: 0, generated: 0, formats: {}, log: [] });
      return before;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return upstream;
}
