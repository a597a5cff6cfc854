/**
 * What a caller can be told about, rendered in one place, so every error body has the same JSON
 * shape: {"error": {"status", "message", "parameter"?, "setting"?, "docs"?}}. HttpError itself is a
 * plain status and message (404, 403, 429...); the kinds the code tells apart have classes below.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly parameter: string | undefined;
  /** For a 503 caused by configuration: which setting is wrong (never its value). */
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

/** 400: a parameter of the link is wrong, and the message says how (rendered with its `docs` link). */
export class BadParameter extends HttpError {
  declare readonly parameter: string;
  /** The documented parameter the error points to, when not `parameter` itself (`limt`: limit). */
  readonly documented: string | undefined;
  constructor(parameter: string, message: string, options: { cause?: unknown; documented?: string } = {}) {
    super(400, message, { parameter, ...(options.cause === undefined ? {} : { cause: options.cause }) });
    this.name = "BadParameter";
    this.documented = options.documented;
  }
}

/**
 * 400 on `limit`: the export would pass one of this worker's limits. A format whose failures leave
 * a file no reader opens (XLSX) ends its file with a marker row instead when one stops it mid-way.
 */
export abstract class ExportLimit extends BadParameter {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("limit", message, options);
  }
}

/** More rows match than one export may hold: the worker's MAX_ROWS, or the format's own (a sheet's). */
export class RowLimitExceeded extends ExportLimit {}

/** The export would need more upstream requests than one request to this worker may make. */
export class SubrequestBudgetExceeded extends ExportLimit {}

/** The file would be larger than its format holds (an XLSX sheet without ZIP64). */
export class FormatSizeExceeded extends ExportLimit {}

/** CKAN failed, answered what cannot be used, or could not be reached in time (502, 503, 504). */
export class UpstreamFailure extends HttpError {
  constructor(
    status: 502 | 503 | 504,
    message: string,
    options: { cause?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(status, message, options);
    this.name = "UpstreamFailure";
  }
}

/** 429: too many requests from this client or for this link; Retry-After says when to come back. */
export class TooManyRequests extends HttpError {
  constructor(message: string, retryAfterSeconds: number) {
    super(429, message, { headers: { "retry-after": String(retryAfterSeconds) } });
    this.name = "TooManyRequests";
  }
}

/** 408: the client stopped reading its download, or read it slower than the minimum rate, so it was stopped. */
export class ClientTooSlow extends HttpError {
  constructor(message: string) {
    super(408, message);
    this.name = "ClientTooSlow";
  }
}

/** 500: a fault of the worker itself (a bug, an unexpected error), told without its message. */
export class InternalFault extends HttpError {
  constructor(cause: unknown) {
    super(500, "Internal error while exporting; the failure was logged.", { cause });
    this.name = "InternalFault";
  }
}

/**
 * A 503 that names the setting an operator must fix and where, never its value: the worker cannot
 * serve until it is set, and every route says so the same way.
 */
export class ConfigurationError extends HttpError {
  declare readonly setting: string;
  constructor(setting: string, problem: string) {
    super(
      503,
      `The worker is not configured: setting ${setting} ${problem}. An operator must set it: in wrangler.toml under [vars] (npm run setup writes CKAN_BASE_URL and RESOURCES), with a binding for SNAPSHOTS, or in the dashboard's Variables, then deploy again.`,
      { setting },
    );
    this.name = "ConfigurationError";
  }
}

/**
 * A failure a retry cannot mend (the table changed under a snapshot run, or it outgrew its parts):
 * the run stops instead of trying the step again. Never an answer to a request of its own.
 */
export class PermanentFailure extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = "PermanentFailure";
  }
}

export const configError = (setting: string, problem: string): ConfigurationError =>
  new ConfigurationError(setting, problem);

export const badRequest = (parameter: string, message: string): BadParameter => new BadParameter(parameter, message);

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
  return new InternalFault(error);
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
