import type { Env } from "../config/env.ts";

export type Redact = (text: string) => string;

/**
 * Last line of defence for text leaving the worker: even a caller who pastes a secret into a
 * parameter, or an upstream that echoes the token, does not get it back in a message.
 */
export function redactorOf(values: readonly (string | undefined)[]): Redact {
  const secrets = values
    .filter((v): v is string => typeof v === "string")
    .map((v) => v.trim())
    .filter((v) => v.length >= 4);
  if (secrets.length === 0) return (text) => text;
  return (text) => secrets.reduce((out, secret) => out.split(secret).join("[redacted]"), text);
}

/** Every secret the worker holds; none may appear in a response, an error or a log line. */
export const redactor = (env: Env): Redact => redactorOf([env.CKAN_API_TOKEN, env.ADMIN_TOKEN, env.LINK_SIGNING_KEY]);
