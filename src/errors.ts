/**
 * One error type for everything a caller can be told about, rendered in one place, so every error
 * body has the same JSON shape: {"error": {"status", "message", "parameter"?}}.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly parameter: string | undefined;
  /** For a 500 caused by configuration: which setting is wrong (never its value). */
  readonly setting: string | undefined;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    message: string,
    options: { parameter?: string; setting?: string; cause?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "HttpError";
    this.status = status;
    this.parameter = options.parameter;
    this.setting = options.setting;
    this.headers = options.headers ?? {};
  }
}

/** A 500 that names the setting an operator must fix, never its value. */
/**
 * A 503 that names the setting an operator must fix and where, never its value: the worker cannot
 * serve until it is set, and every route says so the same way.
 */
export const configError = (setting: string, problem: string): HttpError =>
  new HttpError(
    503,
    `The worker is not configured: setting ${setting} ${problem}. An operator must set it: in wrangler.toml under [vars] (npm run setup writes CKAN_BASE_URL and RESOURCES), with a binding for SNAPSHOTS, or in the dashboard's Variables, then deploy again.`,
    { setting },
  );

export const badRequest = (parameter: string, message: string): HttpError =>
  new HttpError(400, message, { parameter });

/** `docs`: where the parameter at fault is documented, when it is one of the link's parameters. */
export function errorBody(error: HttpError, docs?: string): string {
  const body: { status: number; message: string; parameter?: string; setting?: string; docs?: string } = {
    status: error.status,
    message: error.message,
  };
  if (error.parameter !== undefined) body.parameter = error.parameter;
  if (error.setting !== undefined) body.setting = error.setting;
  if (docs !== undefined) body.docs = docs;
  return JSON.stringify({ error: body });
}

/**
 * Anything that is not an HttpError is a bug or an unexpected fault: the caller gets a generic 500
 * and never the original message, which could carry internals.
 */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  return new HttpError(500, "Internal error while exporting; the failure was logged.", { cause: error });
}

export function errorResponse(error: HttpError, redact: (text: string) => string = (t) => t, docs?: string): Response {
  return new Response(redact(errorBody(error, docs)), {
    status: error.status,
    headers: {
      "content-type": "application/json; charset=utf-8",
      "cache-control": "no-store",
      ...error.headers,
    },
  });
}

/** Text quoted back to a caller is cut, so a hostile link cannot make an error message huge. */
export const clip = (text: string, max = 60): string => (text.length > max ? `${text.slice(0, max)}…` : text);

/**
 * A 503 for a missing binding (an R2 bucket, a Workflow): bindings are neither [vars] nor the
 * dashboard's Variables, so the fix names the wrangler.toml table that declares one.
 */
export const bindingError = (binding: string, what: string, table: string): HttpError =>
  new HttpError(
    503,
    `The worker is not configured: ${what} binding ${binding} is missing. An operator must add it: a ${table} entry with binding = "${binding}" in wrangler.toml (or the binding in the dashboard's Settings, Bindings), then deploy again.`,
    { setting: binding },
  );
