import { noteServedAt } from "../ckan/client.ts";
import { configFor, type Config } from "../config/config.ts";
import type { Env } from "../config/env.ts";
import { BadParameter, errorResponse, HttpError, toHttpError } from "../errors.ts";
import { logRequest, newRequestInfo, type RequestInfo } from "../http/request-log.ts";
import { log } from "../log/log.ts";
import { redactor } from "../log/redact.ts";
import { parameterAnchor, parameterEntry } from "../query/params.ts";
import { corsHeaders } from "../security/cors.ts";
import type { Method, Route, RoutedRequest } from "./route.ts";

/** A URL longer than this is refused before anything else reads it. */
export const MAX_URL_LENGTH = 8192;

/**
 * The one pipeline around every request: admission, the route (its own policy applied by
 * routes/pipeline.ts), any error in the one JSON shape, then CORS, the request id and the log line.
 */
export async function answer(
  request: RoutedRequest,
  env: Env,
  route: (info: RequestInfo) => Promise<Response>,
): Promise<Response> {
  const info = newRequestInfo();
  let response: Response;
  try {
    admit(request, env);
    response = await route(info);
  } catch (error) {
    response = renderError(error, request, env, info);
  }
  return finish(response, request, env, info);
}

/** Before any route: the URL's length, and the configuration (503 naming a missing setting). */
function admit(request: RoutedRequest, env: Env): void {
  noteServedAt(new URL(request.url));
  if (request.url.length > MAX_URL_LENGTH) {
    throw new BadParameter(
      "url",
      `The link is ${request.url.length} characters long; the most this worker accepts is ${MAX_URL_LENGTH}.`,
    );
  }
  configFor(env);
}

/** Every error, whatever threw it, becomes the one JSON shape; a 5xx with a cause is logged. */
function renderError(error: unknown, request: RoutedRequest, env: Env, info: RequestInfo): Response {
  const httpError = toHttpError(error);
  const redact = redactor(env);
  if (httpError.status >= 500 && httpError.cause !== undefined) {
    log({ event: "error", id: info.id, message: httpError.message, cause: String(httpError.cause) }, redact);
  }
  const documented = documentedParameter(httpError);
  const entry = documented === undefined ? undefined : parameterEntry(documented);
  return errorResponse(httpError, redact, entry && `${new URL(request.url).origin}/#${parameterAnchor(entry)}`);
}

/** The link parameter whose docs an error links: a bad parameter's, or the one it was likely meant as (`limt`: limit). */
function documentedParameter(error: HttpError): string | undefined {
  if (error instanceof BadParameter) return error.documented ?? error.parameter;
  // CKAN's own refusal of a parameter (its 400 naming it) links the parameter's docs too.
  return error.status === 400 ? error.parameter : undefined;
}

/** After every route: CORS, the request id, the one log line. */
function finish(response: Response, request: RoutedRequest, env: Env, info: RequestInfo): Response {
  let config: Config | undefined;
  try {
    config = configFor(env);
  } catch {
    config = undefined;
  }
  for (const [name, value] of Object.entries(corsHeaders(request, config))) response.headers.set(name, value);
  response.headers.set("x-request-id", info.id);
  logRequest(request, info, response.status, redactor(env));
  return response;
}

/** A route path's regex (itty-router's `:name` parts match one segment). */
export const patternOf = (path: string): RegExp =>
  new RegExp(`^${path.replace(/\./g, "\\.").replace(/:(\w+)/g, "[^/]+")}$`);

/** What the route table says of a path no route took: 405 naming the methods it has, or 404 listing the routes. */
export function noRoute(request: RoutedRequest, routes: readonly Route[]): never {
  const { pathname } = new URL(request.url);
  const allowed = new Set<Method>(
    routes.filter((route) => patternOf(route.path).test(pathname)).flatMap((route) => route.methods),
  );
  if (allowed.size > 0) {
    const methods = [...allowed].join(", ");
    throw new HttpError(405, `${request.method} is not how ${pathname.slice(0, 80)} is used: it answers ${methods}.`, {
      headers: { allow: methods },
    });
  }
  const paths = routes.flatMap((route) =>
    Object.entries(route.openapi()).map(
      ([path, operations]) =>
        `${Object.keys(operations)
          .map((m) => m.toUpperCase())
          .join("|")} ${path}`,
    ),
  );
  throw new HttpError(
    404,
    `Not found. This worker answers: ${paths.join(", ")}. Every route is described in /openapi.json.`,
  );
}
