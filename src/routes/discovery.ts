import { cachedJson } from "../discovery/cached-json.ts";
import { describeResource, listResources } from "../discovery/resources.ts";
import { badRequest, HttpError } from "../errors.ts";
import { wantsFresh } from "../http/edge-cache.ts";
import { discoveryDeps } from "./guards.ts";
import { errors, json, pathParameter, ref } from "./openapi-parts.ts";
import { openApiDocument } from "./openapi.ts";
import type { Route } from "./route.ts";

/**
 * Discovery routes take no parameters: anything but a `_` cache buster is a 400, as on exports, so
 * made-up parameters cannot mint cache entries and upstream calls.
 */
function refuseParameters(url: URL): void {
  const unknown = [...new Set([...url.searchParams.keys()].filter((name) => !name.startsWith("_")))];
  if (unknown.length === 0) return;
  const names = unknown
    .slice(0, 5)
    .map((name) => name.slice(0, 40))
    .join(", ");
  throw badRequest(
    unknown[0]!.slice(0, 40),
    `Unknown parameter${unknown.length > 1 ? "s" : ""} ${names}: ${url.pathname.slice(0, 80)} takes none (a name starting with _ is ignored).`,
  );
}

/** A list with an alias whose check failed. */
const listsAnError = (answer: unknown): boolean =>
  ((answer as { resources?: { error?: unknown }[] }).resources ?? []).some((entry) => entry.error !== undefined);

/** GET /resources: the published resources, with a link per format. */
export const resourcesRoute: Route = {
  methods: ["GET"],
  path: "/resources",
  guards: ["operators when signing", "rate limit"],
  conditional: true,
  async handle(context) {
    const discovery = discoveryDeps(context);
    refuseParameters(context.url);
    return cachedJson(
      context.url,
      discovery.config,
      () => listResources(discovery),
      wantsFresh(context.request),
      listsAnError,
    );
  },
  openapi: () => ({
    "/resources": {
      get: {
        operationId: "listResources",
        tags: ["discovery"],
        summary: "The published resources",
        responses: {
          "200": json(ref("ResourceList"), "The list."),
          "304": { description: "Not modified (If-None-Match)." },
          ...errors("400", "401", "429", "503"),
        },
      },
    },
  }),
};

/** GET /resources/<alias>: one resource's columns, data dictionary, values and example links. */
export const resourceRoute: Route = {
  methods: ["GET"],
  path: "/resources/:alias",
  guards: ["operators when signing", "rate limit"],
  conditional: true,
  async handle(context) {
    const discovery = discoveryDeps(context);
    refuseParameters(context.url);
    let alias: string;
    try {
      alias = decodeURIComponent(context.request.params.alias ?? "");
    } catch {
      throw new HttpError(404, "No resource has that name: the name in the link is not valid URL encoding.", {
        parameter: "resource",
      });
    }
    return cachedJson(
      context.url,
      discovery.config,
      () => describeResource(alias, discovery),
      wantsFresh(context.request),
    );
  },
  openapi: () => ({
    "/resources/{alias}": {
      get: {
        operationId: "describeResource",
        tags: ["discovery"],
        summary: "A resource's columns, data dictionary, few-valued columns' values, row count and example links",
        parameters: [pathParameter("alias", "An alias from RESOURCES.")],
        responses: {
          "200": json(ref("Resource"), "The resource."),
          "304": { description: "Not modified (If-None-Match)." },
          ...errors("400", "404", "429", "502", "503", "504"),
        },
      },
    },
  }),
};

/** GET /openapi.json: this worker's routes, described from the route table. */
export const openApiRoute: Route = {
  methods: ["GET"],
  path: "/openapi.json",
  guards: ["rate limit"],
  handle({ url, routes }) {
    return Response.json(openApiDocument(routes, url.origin), { headers: { "cache-control": "public, max-age=300" } });
  },
  openapi: () => ({
    "/openapi.json": {
      get: {
        operationId: "openapi",
        tags: ["discovery"],
        summary: "This description",
        responses: { "200": json({ type: "object" }, "OpenAPI 3.1.") },
      },
    },
  }),
};
