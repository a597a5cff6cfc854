import { FORMATS } from "../query/formats.ts";
import type { Route, RequestContext } from "./route.ts";

/** A browser asks for HTML; curl (any type), fetch() and JSON clients keep the JSON index. */
export const wantsPage = (request: Request): boolean => /\btext\/html\b/i.test(request.headers.get("accept") ?? "");

/** GET /: the link-builder page (Workers Static Assets, public/index.html) for browsers, else the JSON index. */
async function indexPage({ request, env }: RequestContext): Promise<Response> {
  if (wantsPage(request) && env.ASSETS !== undefined) {
    const page = await env.ASSETS.fetch(new Request(new URL("/", request.url), { headers: request.headers }));
    const response = new Response(page.body, page);
    response.headers.append("vary", "Accept");
    return response;
  }
  const origin = new URL(request.url).origin;
  return Response.json(
    {
      service: "Datastore Export",
      page: `${origin}/`,
      resources: `${origin}/resources`,
      exports: Object.keys(FORMATS).map((f) => `${origin}/export.${f}?resource=<name>`),
      snapshots: `${origin}/snapshots`,
      openapi: `${origin}/openapi.json`,
      docs: "Open this address in a browser to build a link, or see README.md for every parameter.",
    },
    { headers: { vary: "Accept" } },
  );
}

export const indexRoute: Route = {
  methods: ["GET"],
  path: "/",
  guards: [],
  // The page's own headers (static assets) stand; the JSON index says nothing either.
  cache: { kind: "unset" },
  handle: indexPage,
  openapi: () => ({
    "/": {
      get: {
        operationId: "index",
        tags: ["discovery"],
        summary: "The link-builder page; a JSON index for clients that ask for application/json",
        responses: {
          "200": {
            description: "The page or the index.",
            content: {
              "text/html": { schema: { type: "string" } },
              "application/json": { schema: { type: "object" } },
            },
          },
        },
      },
    },
  }),
};
