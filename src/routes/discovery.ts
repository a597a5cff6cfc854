import { cachedJson } from "../discovery/cached-json.ts";
import { describeResource, listResources } from "../discovery/resources.ts";
import { HttpError } from "../errors.ts";
import { wantsFresh } from "../http/edge-cache.ts";
import { discoveryDeps } from "./guards.ts";
import { errors, json, pathParameter, ref } from "./openapi-parts.ts";
import { openApiDocument } from "./openapi.ts";
import type { Route } from "./route.ts";

/** GET /resources: the published resources, with a link per format. */
export const resourcesRoute: Route = {
  methods: ["GET"],
  path: "/resources",
  guards: ["operators when signing", "rate limit"],
  conditional: true,
  async handle(context) {
    const discovery = discoveryDeps(context);
    return cachedJson(context.url, discovery.config, () => listResources(discovery), wantsFresh(context.request));
  },
  openapi: () => ({
    "/resources": {
      get: { operationId: "listResources", tags: ["discovery"], summary: "The published resources", responses: { "200": json(ref("ResourceList"), "The list."), "304": { description: "Not modified (If-None-Match)." }, ...errors("401", "429", "503") } },
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
    let alias: string;
    try {
      alias = decodeURIComponent(context.request.params.alias ?? "");
    } catch {
      throw new HttpError(404, "No resource has that name: the name in the link is not valid URL encoding.", { parameter: "resource" });
    }
    return cachedJson(context.url, discovery.config, () => describeResource(alias, discovery), wantsFresh(context.request));
  },
  openapi: () => ({
    "/resources/{alias}": {
      get: {
        operationId: "describeResource",
        tags: ["discovery"],
        summary: "A resource's columns, data dictionary, few-valued columns' values, row count and example links",
        parameters: [pathParameter("alias", "An alias from RESOURCES.")],
        responses: { "200": json(ref("Resource"), "The resource."), "304": { description: "Not modified (If-None-Match)." }, ...errors("404", "429", "502", "503", "504") },
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
    "/openapi.json": { get: { operationId: "openapi", tags: ["discovery"], summary: "This description", responses: { "200": json({ type: "object" }, "OpenAPI 3.1.") } } },
  }),
};
