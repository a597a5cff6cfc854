import { signLinkRoute } from "../discovery/signed-links.ts";
import { ADMIN, error, errors, json } from "./openapi-parts.ts";
import type { Route } from "./route.ts";

/** POST /links: an operator signs a link (with LINK_SIGNING_KEY set). */
export const linksRoute: Route = {
  methods: ["POST"],
  path: "/links",
  guards: ["admin token"],
  // A signed link is a credential of sorts: kept by no cache.
  cache: { kind: "no-store" },
  handle({ request, config }) {
    return signLinkRoute(request, config);
  },
  openapi: () => ({
    "/links": {
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
                  link: {
                    type: "string",
                    description: "An export or snapshot link: a path with its query, or a URL on this worker.",
                  },
                  expires_in: {
                    type: "integer",
                    minimum: 60,
                    description: "Seconds until the link stops working; absent: never.",
                  },
                },
              },
            },
          },
        },
        responses: {
          "200": json(
            {
              type: "object",
              required: ["link"],
              properties: {
                link: { type: "string", format: "uri" },
                expires: { type: ["string", "null"], format: "date-time" },
              },
            },
            "The signed link.",
          ),
          ...errors("400", "404", "503"),
          "401": error("Missing or wrong admin token."),
        },
      },
    },
  }),
};
