import type { Version } from "./cells.ts";
import { pyDumps } from "./py-json.ts";

// CKAN's error answers, in the exact shapes (and, written with Python's json.dumps, the exact
// bytes) of the recorded 2.10 and 2.12 responses: an envelope {help, error, success: false} for
// action errors, a bare JSON string for a malformed request.

/** The site's own address as CKAN writes it (site_url): where the recorded 2.12 answers were made. */
export const SITE_URL = "http://127.0.0.1:5000";
export const HELP_URL = `${SITE_URL}/api/3/action/help_show?name=datastore_search`;
export const JSON_CONTENT_TYPE = "application/json;charset=utf-8";

export class EmulatorError extends Error {
  readonly status: number;
  readonly body: unknown;

  constructor(status: number, body: unknown, message: string) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

function actionError(status: number, error: Record<string, unknown>): EmulatorError {
  const body = { help: HELP_URL, error, success: false };
  return new EmulatorError(status, body, JSON.stringify(error));
}

/** 409 with one or more parameter errors: {"limit": ["Invalid integer"], "__type": ...}. */
export function validationError(errors: Record<string, unknown>): EmulatorError {
  return actionError(409, { ...errors, __type: "Validation Error" });
}

/** The `invalid value "<x>"` form CKAN's datastore uses for anything it does not recognise. */
export function invalidValue(param: string, value: string): EmulatorError {
  return validationError({ [param]: [`invalid value "${value}"`] });
}

/** What PostgreSQL's refusal of a query looks like once CKAN has wrapped it (see sql.ts). */
export function invalidQuery(statement: string, params: unknown[], orig: string): EmulatorError {
  return validationError({ query: ["Invalid query"], info: { statement: [statement], params, orig: [orig] } });
}

export function notFound(resourceId: string): EmulatorError {
  return actionError(404, {
    __type: "Not Found Error",
    message: `Not found: Resource "${resourceId}" was not found.`,
  });
}

export function notAuthorized(resourceId: string, version: Version): EmulatorError {
  // The empty user name (two spaces) is what CKAN prints for an anonymous caller; 2.12 checks
  // access through resource_show and says so.
  const action = version === "2.12" ? "perform resource_show on" : "read";
  return actionError(403, {
    __type: "Authorization Error",
    message: `Access denied: User  not authorized to ${action} resource ${resourceId}`,
  });
}

/** A route CKAN has no action for. */
export function noSuchPath(): EmulatorError {
  return actionError(404, { __type: "Not Found Error", message: "Not found" });
}

export function methodNotAllowed(method: string): EmulatorError {
  return new EmulatorError(405, `Method not allowed: ${method}`, "method not allowed");
}

/** 400 whose body is a bare JSON string, as CKAN answers an unreadable request body. */
export function badRequest(detail: string): EmulatorError {
  const message = `Bad request - JSON Error: ${detail}`;
  return new EmulatorError(400, message, message);
}

export function errorResponse(error: EmulatorError): Response {
  return new Response(pyDumps(error.body), {
    status: error.status,
    headers: { "content-type": JSON_CONTENT_TYPE },
  });
}
