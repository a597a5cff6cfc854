import type { Env } from "../config/env.ts";

export type Redact = (text: string) => string;

/**
 * The shortest run of a secret that is removed wherever it appears. Text from upstream may hold a
 * secret cut anywhere (quoted, then clipped to a length), so matching only the whole secret is not
 * enough: any piece this long is taken out. Shorter pieces say next to nothing about the secret.
 */
export const SECRET_RUN = 8;

const MARK = "[redacted]";

/**
 * Last line of defence for text leaving the worker: even a caller who pastes a secret into a
 * parameter, or an upstream that echoes the token (whole or cut), does not get any run of
 * SECRET_RUN or more of its characters back. A secret shorter than that is removed whole.
 */
export function redactorOf(values: readonly (string | undefined)[]): Redact {
  const secrets = values
    .filter((v): v is string => typeof v === "string")
    .map((v) => v.trim())
    .filter((v) => v.length >= 4);
  if (secrets.length === 0) return (text) => text;
  const short = secrets
    .filter((s) => s.length < SECRET_RUN)
    .map((s) => new RegExp(s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi"));
  // Every SECRET_RUN-character piece of every longer secret: a run of 8+ in the text holds one at each position.
  const pieces = new Set<string>();
  for (const secret of secrets.map(asciiLower))
    for (let i = 0; i + SECRET_RUN <= secret.length; i++) pieces.add(secret.slice(i, i + SECRET_RUN));
  return (input) => {
    const text = short.reduce((out, secret) => out.replace(secret, MARK), input);
    if (pieces.size === 0 || text.length < SECRET_RUN) return text;
    // Compared in ASCII lower case: a URL's host, say, comes back lowered from a token CKAN echoed.
    const lower = asciiLower(text);
    let out = "";
    let kept = 0;
    // Where the last run found ends (inclusive); a run that starts right after it continues it.
    let coveredTo = -2;
    for (let i = 0; i + SECRET_RUN <= text.length; i++) {
      if (!pieces.has(lower.slice(i, i + SECRET_RUN))) continue;
      if (i > coveredTo + 1) {
        // A new run starts: keep the text before it, then the mark.
        out += text.slice(kept, i) + MARK;
      }
      coveredTo = i + SECRET_RUN - 1;
      kept = coveredTo + 1;
    }
    return kept === 0 && out === "" ? text : out + text.slice(kept);
  };
}

/** A-Z lowered, every other character as it is: the same length, so positions stay put. */
const asciiLower = (text: string): string => text.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));

/** Every secret the worker holds; none may appear in a response, an error or a log line. */
export const redactor = (env: Env): Redact => redactorOf([env.CKAN_API_TOKEN, env.ADMIN_TOKEN, env.LINK_SIGNING_KEY]);
