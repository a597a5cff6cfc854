import { SCHEMAS, type Json } from "./openapi-parts.ts";
import type { Route } from "./route.ts";

/**
 * GET /openapi.json: an OpenAPI 3.1 description built from the route table itself (each route
 * describes its own operations, export parameters come from the one parameter table), so the
 * router, this document and the README never disagree.
 */
export function openApiDocument(routes: readonly Route[], origin: string): Json {
  const paths: Json = {};
  for (const route of routes) Object.assign(paths, route.openapi());
  return {
    openapi: "3.1.0",
    info: {
      title: "Datastore Export",
      version: "1",
      description:
        "Links to a CKAN DataStore table as CSV, TSV, JSON, NDJSON, XLSX or Parquet, for spreadsheets and dashboards. With LINK_SIGNING_KEY set, export and snapshot links need a valid `sig`, and discovery needs the admin token.",
    },
    servers: [{ url: origin }],
    tags: [
      { name: "exports", description: "Rows as files." },
      { name: "discovery", description: "What there is to export." },
      { name: "snapshots", description: "Files written on a schedule." },
      { name: "operators", description: "Needs Authorization: Bearer <ADMIN_TOKEN>." },
    ],
    paths,
    components: {
      schemas: SCHEMAS,
      securitySchemes: { adminToken: { type: "http", scheme: "bearer", description: "ADMIN_TOKEN" } },
    },
  };
}
