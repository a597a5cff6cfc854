import type { Redact } from "./redact.ts";

/** One JSON object per line, so Workers Logs can filter on any field; secrets are redacted. */
export function log(fields: Record<string, unknown>, redact: Redact): void {
  console.log(redact(JSON.stringify({ time: new Date().toISOString(), ...fields })));
}
