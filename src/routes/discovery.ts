import { jsonAnswer } from "../discovery/json-answer.ts";
import { describeResource, listResources } from "../discovery/resources.ts";
import { badRequest, HttpError } from "../errors.ts";
import { redactor } from "../log/redact.ts";
import { discoveryDeps } from "./guards.ts";
import { errors, json, pathParameter, ref } from "./openapi-parts.ts";
import { openApiDocument } from "./openapi.ts";
import type { CachePolicy, Route } from "./route.ts";

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

/**
 * Discovery answers in the edge cache, keyed by what each alias stands for (every answer depends on
 * it); with signing on they are for operators, never stored where a proxy could share them.
 */
const DISCOVERY_CACHE: CachePolicy = {
  kind: "edge",
  staleWhileRevalidate: false,
  operatorsOnly: true,
  shapedBy: (_input, { config }) => [[...config.resources]],
};

/** GET /resources: the published resources, with a link per format. */
export const resourcesRoute: Route = {
  methods: ["GET"],
  path: "/resources",
  guards: ["operators when signing", "rate limit"],
  conditional: true,
  cache: DISCOVERY_CACHE,
  input: ({ url }) => refuseParameters(url),
  async handle(context) {
    return jsonAnswer(await listResources(discoveryDeps(context)), redactor(context.env), context.keep, listsAnError);
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
export const resourceRoute: Route<string> = {
  methods: ["GET"],
  path: "/resources/:alias",
  guards: ["operators when signing", "rate limit"],
  conditional: true,
  cache: DISCOVERY_CACHE,
  input({ url, request }) {
    refuseParameters(url);
    try {
      return decodeURIComponent(request.params.alias ?? "");
    } catch {
      throw new HttpError(404, "No resource has that name: the name in the link is not valid URL encoding.", {
        parameter: "resource",
      });
    }
  },
  async handle(context, alias) {
    return jsonAnswer(
      await describeResource(alias, discoveryDeps(context)),
      redactor(context.env),
      context.keep,
      (answer) => Object.hasOwn(answer as object, "values_incomplete"),
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
  cache: { kind: "max-age", seconds: 300 },
  handle({ url, routes }) {
    return Response.json(openApiDocument(routes, url.origin));
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
