// `npm run sign -- "/export.csv?resource=grants&limit=100" [--expires 30d] [--origin https://export.example.org] [--config wrangler.toml]`
// Prints the link signed with LINK_SIGNING_KEY, read from the environment or from .dev.vars. The
// link is checked first as POST /links checks it (the same function), against the worker's settings
// in the config (its RESOURCES, MAX_ROWS): a link the worker would refuse is refused here, not signed.
import { existsSync, readFileSync } from "node:fs";
import { checkLinkToSign } from "../src/discovery/signed-links.ts";
import { parseConfig } from "../src/config/config.ts";
import type { Env } from "../src/config/env.ts";
import { HttpError } from "../src/errors.ts";
import { signedPath } from "../src/security/signature.ts";

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

function usage(message: string): never {
  console.error(
    `${message}\nusage: npm run sign -- "/export.csv?resource=<name>&..." [--expires 30d|12h|<unix seconds>] [--origin <worker URL>] [--config <wrangler.toml>]`,
  );
  process.exit(2);
}

/** `.dev.vars` is dotenv-style: NAME=value, optionally quoted. */
function fromDevVars(name: string): string | undefined {
  if (!existsSync(".dev.vars")) return undefined;
  for (const line of readFileSync(".dev.vars", "utf8").split(/\r?\n/)) {
    const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (match?.[1] === name) return (match[2] ?? "").replace(/^(["'])(.*)\1$/, "$2");
  }
  return undefined;
}

function expiry(text: string, now: number): number {
  const relative = /^(\d+)([smhdw])$/.exec(text);
  if (relative) return Math.floor(now / 1000) + Number(relative[1]) * (UNITS[relative[2] as string] as number);
  if (/^\d{9,12}$/.test(text)) return Number(text);
  return usage(`--expires "${text}" is neither a duration like 30d nor a Unix time`);
}

const args = process.argv.slice(2);
let link: string | undefined;
let expires: number | undefined;
let origin = process.env.WORKER_ORIGIN ?? "http://127.0.0.1:8787";
let configPath = "wrangler.toml";
for (let i = 0; i < args.length; i++) {
  const arg = args[i] as string;
  if (arg === "--expires") expires = expiry(args[++i] ?? usage("--expires needs a value"), Date.now());
  else if (arg === "--origin") origin = args[++i] ?? usage("--origin needs a value");
  else if (arg === "--config") configPath = args[++i] ?? usage("--config needs a value");
  else if (link === undefined) link = arg;
  else usage(`unexpected argument "${arg}"`);
}
if (link === undefined) usage("which link?");
const parsed = new URL(link, origin);
const key = process.env.LINK_SIGNING_KEY ?? fromDevVars("LINK_SIGNING_KEY");
if (!key) usage("LINK_SIGNING_KEY is not set (in the environment or .dev.vars)");

// The worker's settings as its config gives them (secrets aside); sign never calls CKAN, so an
// unset CKAN_BASE_URL is only a placeholder here.
const { experimental_readRawConfig } = await import("wrangler");
const vars = (experimental_readRawConfig({ config: configPath }).rawConfig.vars ?? {}) as Env;
try {
  checkLinkToSign(
    parsed,
    parseConfig({ ...vars, CKAN_BASE_URL: vars.CKAN_BASE_URL ?? "https://ckan.invalid", LINK_SIGNING_KEY: key }),
  );
} catch (error) {
  if (!(error instanceof HttpError)) throw error;
  console.error(
    `npm run sign: not signed, the worker would refuse this link (${error.status}${error.parameter === undefined ? "" : `, parameter ${error.parameter}`}): ${error.message}`,
  );
  process.exit(1);
}
console.log(parsed.origin + (await signedPath(key, parsed.pathname + parsed.search, expires)));
