import { badRequest, methodNotAllowed } from "./error-answers.ts";

export type RawParams = Record<string, unknown>;

export interface ParsedRequest {
  params: RawParams;
  /** The query string CKAN builds `_links` from: empty for a POST. */
  linkQuery: URLSearchParams;
}

/**
 * Reads the action's parameters as CKAN does: a POST's JSON body, or a GET's query string where
 * every value is a string and a repeated key becomes a list.
 */
export async function parseRequest(request: Request, url: URL): Promise<ParsedRequest> {
  if (request.method === "GET" || request.method === "HEAD") {
    return { params: fromQuery(url.searchParams), linkQuery: new URLSearchParams(url.searchParams) };
  }
  if (request.method !== "POST") throw methodNotAllowed(request.method);
  return { params: parseBody(await request.text()), linkQuery: new URLSearchParams() };
}

function fromQuery(search: URLSearchParams): RawParams {
  const params: RawParams = {};
  for (const key of new Set(search.keys())) {
    const values = search.getAll(key);
    params[key] = values.length === 1 ? values[0] : values;
  }
  return params;
}

function parseBody(text: string): RawParams {
  if (text.trim() === "") return {};
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw badRequest(
      `Error decoding JSON data. Error: ${reason} JSON data extracted from the request: '${text.slice(0, 200)}'`,
    );
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw badRequest(`Request data JSON decoded to ${text.slice(0, 200)} but it needs to be a dictionary.`);
  }
  return data as RawParams;
}
