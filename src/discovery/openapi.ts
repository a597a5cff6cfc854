import { parameterAnchor, parametersFor, type Parameter } from "../query/params.ts";
import { FORMATS, type FormatName } from "../query/formats.ts";

// GET /openapi.json: an OpenAPI 3.1 description of every route, its export parameters rendered from
// the one parameter table (src/query/params.ts), so the parser, the README and this never disagree.

type Json = Record<string, unknown>;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Json, description: string): Json => ({ description, content: { "application/json": { schema } } });
const error = (description: string): Json => json(ref("Error"), description);

const ERRORS: Record<string, string> = {
  "400": "A bad parameter, or CKAN rejected one; `parameter` names it and `docs` links to its documentation.",
  "401": "With signing on, discovery and operator routes need Authorization: Bearer <ADMIN_TOKEN>.",
  "403": "Not published by this worker, a missing, wrong or expired signature, or the CKAN token cannot read it.",
  "404": "Unknown alias, route or format, or the resource does not exist on CKAN.",
  "429": "Too many requests for this link or address (see Retry-After).",
  "500": "The worker is misconfigured: `setting` names which setting.",
  "502": "CKAN failed or could not be reached.",
  "503": "CKAN is rate-limiting the worker (see Retry-After).",
  "504": "CKAN did not answer in time.",
};
const errors = (...codes: string[]): Json => Object.fromEntries(codes.map((code) => [code, error(ERRORS[code] ?? "Error.")]));

function parameter(p: Parameter): Json {
  const { default: fallback, ...rest } = p.schema;
  const schema: Json = { ...rest, ...(fallback === undefined ? {} : { default: fallback }) };
  return {
    name: p.name,
    in: "query",
    required: false,
    description: p.meaning + (p.pattern ? " (the name is a pattern: replace the part in angle brackets)" : ""),
    schema: p.repeatable ? { type: "array", items: schema } : schema,
    ...(p.repeatable ? { style: "form", explode: true } : {}),
    "x-example-link": p.example,
    "x-anchor": parameterAnchor(p),
  };
}

function exportOperation(format: FormatName, method: "get" | "head"): Json {
  const { contentType } = FORMATS[format];
  const body = format === "json" ? { type: "array", items: { type: "object" } } : { type: "string" };
  return {
    operationId: `${method}Export${format[0]!.toUpperCase()}${format.slice(1)}`,
    summary: `${method === "head" ? "Headers of" : "Rows of a CKAN table as"} ${format.toUpperCase()}`,
    tags: ["exports"],
    parameters: parametersFor(format).map(parameter),
    responses: {
      "200": {
        description: "The export. Small ones come whole with Content-Length; larger ones stream.",
        headers: {
          "X-Total-Count": { description: "CKAN's count of matching rows, before limit and offset.", schema: { type: "integer" } },
          "Content-Disposition": { description: "attachment, with the download name.", schema: { type: "string" } },
          ETag: { schema: { type: "string" } },
        },
        content: { [contentType.split(";")[0]!]: { schema: body } },
      },
      "304": { description: "Not modified (If-None-Match)." },
      ...errors("400", "403", "404", "429", "500", "502", "503", "504"),
    },
  };
}

/** What both the list and one resource say of a resource: its names, description and row count. */
const RESOURCE_NAMING = {
  name: { type: "string" },
  resource_id: { type: "string", format: "uuid" },
  title: { type: "string" },
  description: { type: "string" },
  rows: { type: ["integer", "null"] },
};

const SCHEMAS: Json = {
  Error: {
    type: "object",
    required: ["error"],
    properties: {
      error: {
        type: "object",
        required: ["status", "message"],
        properties: {
          status: { type: "integer" },
          message: { type: "string", description: "What went wrong, in words a spreadsheet user can act on." },
          parameter: { type: "string", description: "The parameter at fault." },
          setting: { type: "string", description: "The misconfigured setting (a 500), never its value." },
          docs: { type: "string", format: "uri", description: "Where the parameter is documented." },
        },
      },
    },
  },
  Column: {
    type: "object",
    required: ["id", "type"],
    properties: {
      id: { type: "string" },
      type: { type: "string", description: "PostgreSQL type name as CKAN reports it." },
      label: { type: "string", description: "The data dictionary's label." },
      description: { type: "string", description: "The data dictionary's notes." },
      distinct: { type: "integer", description: "How many different values the column holds." },
      values: { type: "array", items: { type: ["string", "number", "boolean"] }, description: "Every value, when there are few." },
    },
  },
  ResourceList: {
    type: "object",
    required: ["resources"],
    properties: {
      resources: {
        type: "array",
        items: {
          type: "object",
          required: ["name", "resource_id", "links"],
          properties: {
            ...RESOURCE_NAMING,
            links: { type: "object", additionalProperties: { type: "string", format: "uri" } },
          },
        },
      },
      unlisted_allowed: { type: "boolean" },
      max_rows: { type: "integer" },
      signing: { type: "boolean" },
    },
  },
  Resource: {
    type: "object",
    required: ["name", "resource_id", "columns"],
    properties: {
      ...RESOURCE_NAMING,
      max_rows: { type: "integer" },
      range_filters: { type: ["boolean", "null"], description: "false: the CKAN site is older than 2.12; null: not known yet." },
      columns: { type: "array", items: ref("Column") },
      examples: { type: "array", items: { type: "object", properties: { title: { type: "string" }, url: { type: "string", format: "uri" } } } },
    },
  },
};

const ADMIN = [{ adminToken: [] }];
const pathParameter = (name: string, description: string): Json => ({ name, in: "path", required: true, description, schema: { type: "string" } });

export function openApiDocument(origin: string): Json {
  const paths: Json = {};
  for (const format of Object.keys(FORMATS) as FormatName[]) {
    paths[`/export.${format}`] = { get: exportOperation(format, "get"), head: exportOperation(format, "head") };
  }
  paths["/resources"] = {
    get: { operationId: "listResources", tags: ["discovery"], summary: "The published resources", responses: { "200": json(ref("ResourceList"), "The list."), ...errors("401", "429", "500") } },
  };
  paths["/resources/{alias}"] = {
    get: {
      operationId: "describeResource",
      tags: ["discovery"],
      summary: "A resource's columns, data dictionary, few-valued columns' values, row count and example links",
      parameters: [pathParameter("alias", "An alias from RESOURCES.")],
      responses: { "200": json(ref("Resource"), "The resource."), ...errors("404", "429", "500", "502", "504") },
    },
  };
  paths["/openapi.json"] = { get: { operationId: "openapi", tags: ["discovery"], summary: "This description", responses: { "200": json({ type: "object" }, "OpenAPI 3.1.") } } };
  paths["/links"] = {
    post: {
      operationId: "signLink",
      tags: ["operators"],
      summary: "Sign a link (with LINK_SIGNING_KEY set; operators only)",
      security: ADMIN,
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["link"],
              properties: {
                link: { type: "string", description: "An export or snapshot link: a path with its query, or a URL on this worker." },
                expires_in: { type: "integer", minimum: 60, description: "Seconds until the link stops working; absent: never." },
              },
            },
          },
        },
      },
      responses: {
        "200": json({ type: "object", required: ["link"], properties: { link: { type: "string", format: "uri" }, expires: { type: ["string", "null"], format: "date-time" } } }, "The signed link."),
        ...errors("400", "404", "500"),
        "401": error("Missing or wrong admin token."),
      },
    },
  };
  paths["/snapshots"] = { get: { operationId: "listSnapshots", tags: ["snapshots"], summary: "Snapshot jobs and their latest files", responses: { "200": json({ type: "object" }, "The jobs."), ...errors("500") } } };
  paths["/snapshots/{name}/{file}"] = {
    get: {
      operationId: "getSnapshot",
      tags: ["snapshots"],
      summary: "A snapshot file: latest.<ext>, <stamp>.<ext> or manifest.json",
      parameters: [pathParameter("name", "The job's name."), pathParameter("file", "latest.csv, 20260102T030000Z.csv, manifest.json, ...")],
      responses: { "200": { description: "The file (Range gives 206)." }, "206": { description: "Part of the file." }, "304": { description: "Not modified." }, ...errors("403", "404") },
    },
  };
  paths["/snapshots/{name}/run"] = {
    post: {
      operationId: "runSnapshot",
      tags: ["snapshots"],
      summary: "Run a snapshot job now (operators only)",
      security: ADMIN,
      parameters: [pathParameter("name", "The job's name.")],
      responses: { "200": json({ type: "object" }, "The run."), "502": json({ type: "object" }, "The run failed."), "401": error("Missing or wrong admin token."), ...errors("404") },
    },
  };
  paths["/"] = {
    get: {
      operationId: "index",
      tags: ["discovery"],
      summary: "The link-builder page; a JSON index for clients that ask for application/json",
      responses: { "200": { description: "The page or the index.", content: { "text/html": { schema: { type: "string" } }, "application/json": { schema: { type: "object" } } } } },
    },
  };
  return {
    openapi: "3.1.0",
    info: {
      title: "Datastore Export",
      version: "1",
      description:
        "Links to a CKAN DataStore table as CSV, TSV, JSON or NDJSON, for spreadsheets and dashboards. With LINK_SIGNING_KEY set, export and snapshot links need a valid `sig`, and discovery needs the admin token.",
    },
    servers: [{ url: origin }],
    tags: [
      { name: "exports", description: "Rows as files." },
      { name: "discovery", description: "What there is to export." },
      { name: "snapshots", description: "Files written on a schedule." },
      { name: "operators", description: "Needs Authorization: Bearer <ADMIN_TOKEN>." },
    ],
    paths,
    components: { schemas: SCHEMAS, securitySchemes: { adminToken: { type: "http", scheme: "bearer", description: "ADMIN_TOKEN" } } },
  };
}
