import { parameterAnchor, type Parameter } from "../query/params.ts";

// The pieces each route's OpenAPI description is built from: shared responses and schemas.

export type Json = Record<string, unknown>;
/** One path's operations, by lower-case method. */
export type Operations = Partial<Record<"get" | "head" | "post" | "delete", Json>>;

export const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
export const json = (schema: Json, description: string): Json => ({
  description,
  content: { "application/json": { schema } },
});
export const error = (description: string): Json => json(ref("Error"), description);

const ERRORS: Record<string, string> = {
  "400": "A bad parameter, or CKAN rejected one; `parameter` names it and `docs` links to its documentation.",
  "401": "With signing on, discovery and operator routes need Authorization: Bearer <ADMIN_TOKEN>.",
  "403": "Not published by this worker, a missing, wrong or expired signature, or the CKAN token cannot read it.",
  "404": "Unknown alias, route or format, or the resource does not exist on CKAN.",
  "429": "Too many requests for this link or address (see Retry-After).",
  "500": "An unexpected fault; the request log has it.",
  "502": "CKAN failed or could not be reached.",
  "503":
    "The worker is not configured (`setting` names the setting), CKAN is rate-limiting it, or the isolate is busy (see Retry-After).",
  "504": "CKAN did not answer in time.",
};
/** A link parameter as OpenAPI describes it, from its entry in the parameter table (any route family's). */
export function queryParameter(p: Parameter): Json {
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

export const errors = (...codes: string[]): Json =>
  Object.fromEntries(codes.map((code) => [code, error(ERRORS[code] ?? "Error.")]));

/** What both the list and one resource say of a resource: its names, description and row count. */
const RESOURCE_NAMING = {
  name: { type: "string" },
  resource_id: { type: "string", format: "uuid" },
  title: { type: "string" },
  description: { type: "string" },
  rows: { type: ["integer", "null"] },
};

export const SCHEMAS: Json = {
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
          setting: { type: "string", description: "The missing or unusable setting (a 503), never its value." },
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
      values: {
        type: "array",
        items: { type: ["string", "number", "boolean"] },
        description: "Every value, when there are few.",
      },
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
      range_filters: {
        type: ["boolean", "null"],
        description: "false: the CKAN site is older than 2.12; null: not known yet.",
      },
      columns: { type: "array", items: ref("Column") },
      examples: {
        type: "array",
        items: { type: "object", properties: { title: { type: "string" }, url: { type: "string", format: "uri" } } },
      },
    },
  },
};

export const ADMIN = [{ adminToken: [] }];
export const pathParameter = (name: string, description: string): Json => ({
  name,
  in: "path",
  required: true,
  description,
  schema: { type: "string" },
});
