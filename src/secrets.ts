import type { Env } from "./env.ts";

export type Redact = (text: string) => string;

/** Secret values the worker holds; none may appear in a response, an error or a log line. */
function secretValues(env: Env): string[] {
  return [env.CKAN_API_TOKEN, env.ADMIN_TOKEN, env.LINK_SIGNING_KEY]
    .filter((v): v is string => typeof v === "string")
    .map((v) => v.trim())
    .filter((v) => v.length >= 4);
}

/**
 * Last line of defence for text leaving the worker: even a caller who pastes a secret into a
 * parameter does not see it echoed back in an error message.
 */
export function redactor(env: Env): Redact {
  const secrets = secretValues(env);
  if (secrets.length === 0) return (text) => text;
  return (text) => secrets.reduce((out, secret) => out.split(secret).join("[redacted]"), text);
}
