import { HttpError, UpstreamFailure, clip } from "../errors.ts";

/** CKAN's validation errors: parameter -> messages, as in `{"filters": ["invalid value \"x\""]}`. */
export type CkanErrorFields = Record<string, string[]>;

/** A 409 from CKAN, kept apart so paging can recognise a parameter the site does not know. */
export class CkanValidationError extends HttpError {
  readonly fields: CkanErrorFields;
  constructor(status: number, message: string, fields: CkanErrorFields, parameter?: string) {
    super(status, message, parameter === undefined ? {} : { parameter });
    this.fields = fields;
  }
}

/**
 * A validation answer the worker cannot lay on the request (502: it names no parameter of ours) or
 * that is CKAN running out of time (504): CKAN's side as far as the worker can tell, so a later try
 * may pass (a snapshot step tries it again).
 */
export class CkanValidationFault extends CkanValidationError {
  constructor(status: 502 | 504, message: string, fields: CkanErrorFields) {
    super(status, message, fields);
  }
}

/** CKAN's "Invalid query": PostgreSQL refused the SQL CKAN built from the request (a value, an order). */
export class CkanQueryRefused extends CkanValidationError {
  constructor(fields: CkanErrorFields) {
    super(400, "CKAN could not run the query.", fields);
  }
}

/** What our parameters are called for CKAN's names; `query` is CKAN's name for a failed SQL query. */
const OUR_NAME: Record<string, string> = {
  filters: "filters",
  fields: "fields",
  sort: "sort",
  q: "q",
  limit: "limit",
  offset: "offset",
  resource_id: "resource_id",
};

function stringList(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string");
  return typeof value === "string" ? [value] : [];
}

/** Turns CKAN's error object into the error our caller sees; CKAN's SQL and internals stay out. */
export function ckanError(
  status: number,
  error: unknown,
  redact: (text: string) => string,
  hasToken: boolean,
): HttpError {
  const body = error !== null && typeof error === "object" ? (error as Record<string, unknown>) : {};
  const type = typeof body.__type === "string" ? clip(redact(body.__type), 80) : undefined;
  // Redacted before any cut: a cut could leave a piece of a secret that no longer matches it whole.
  const quote = (text: string): string => clip(redact(text), 200);
  const message = typeof body.message === "string" ? quote(body.message) : undefined;

  if (type === "Authorization Error" || status === 403 || status === 401) {
    return new HttpError(
      403,
      hasToken
        ? "The configured CKAN token cannot read this resource (CKAN answered: access denied)."
        : "This resource is private on the CKAN site, and this worker has no CKAN token to read it (an operator sets CKAN_API_TOKEN).",
    );
  }
  if (type === "Not Found Error" || (status === 404 && type !== undefined)) {
    return new HttpError(404, "The resource was not found on the CKAN site.", { parameter: "resource_id" });
  }
  if (type === "Validation Error" || status === 409) {
    const fields: CkanErrorFields = {};
    for (const [key, value] of Object.entries(body)) {
      if (key !== "__type" && key !== "info") fields[quote(key)] = stringList(value).map(quote);
    }
    const query = fields.query ?? [];
    if (query.some((m) => /too long/i.test(m))) {
      return new CkanValidationFault(
        504,
        "The CKAN search took too long. Narrow the export with filters or a limit.",
        fields,
      );
    }
    // PostgreSQL refused the query CKAN built: which parameter is at fault, only the query tells (see refusals.ts).
    if ("query" in fields) return new CkanQueryRefused(fields);
    const [key, messages] = Object.entries(fields)[0] ?? ["", []];
    const parameter = OUR_NAME[key];
    if (parameter === undefined) {
      return new CkanValidationFault(502, `CKAN rejected the request (${key}: ${messages.join("; ")}).`, fields);
    }
    return new CkanValidationError(
      400,
      `CKAN rejected ${parameter}: ${messages.join("; ") || "invalid value"}.`,
      fields,
      parameter,
    );
  }
  return new UpstreamFailure(502, `CKAN reported an error${message ? `: ${message}` : ""}${type ? ` (${type})` : ""}.`);
}
