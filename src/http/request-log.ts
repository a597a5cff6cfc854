import { log } from "../log/log.ts";
import type { Redact } from "../log/redact.ts";

/** What the request log line needs, gathered while the request runs. */
export interface RequestInfo {
  id: string;
  started: number;
  resource?: string;
  /**
   * Set by a route whose body is still streaming when the response leaves: fields known only once
   * it ends (rows, bytes, upstream figures, a late failure's status). The line waits for them.
   */
  completion?: Promise<Record<string, unknown>>;
}

/** A request's log entry, made when it arrives: the route context carries it to whoever adds to it. */
export const newRequestInfo = (): RequestInfo => ({ id: crypto.randomUUID(), started: Date.now() });

/** The one request log line: written when the response leaves, or when its streamed body ends. */
export function logRequest(request: Request, info: RequestInfo, status: number, redact: Redact): void {
  const write = (late: Record<string, unknown>): void =>
    log(
      {
        event: "request",
        id: info.id,
        method: request.method,
        route: new URL(request.url).pathname,
        resource: info.resource,
        status,
        ...late,
        ms: Date.now() - info.started,
      },
      redact,
    );
  if (info.completion === undefined) write({});
  else void info.completion.then(write);
}
