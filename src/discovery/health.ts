import { type ClientSettings, CkanClient, redirectRefused } from "../ckan/client.ts";
import { siteFacts } from "../ckan/site.ts";
import { redactorOf } from "../log/redact.ts";
import type { UpstreamFetch } from "../ckan/types.ts";
import type { Config } from "../config/config.ts";
import type { Secrets } from "../config/narrow.ts";
import { toHttpError, type HttpError } from "../errors.ts";

/** A status_show or one-row search is small: a portal slower than this is not answering. */
const TIMEOUT_MS = 8000;
/** Aliases checked, at most: two small searches each, within the Free plan's 50 subrequests. */
const MAX_CHECKED = 20;

export interface CkanHealth {
  base: string;
  reachable: boolean;
  version: string | null;
  datastore: boolean | null;
  /** CKAN 2.12+: `filter.<field>[gte]` and the like work. */
  range_filters: boolean | null;
}

export interface ResourceHealth {
  name: string;
  resource_id: string;
  ok: boolean;
  /** Whether CKAN refused it to an anonymous caller (only the token can read it); null: not asked. */
  private: boolean | null;
  error?: string;
}

export interface TokenHealth {
  configured: boolean;
  /** true: it unlocked a private resource; false: CKAN refused it; null: nothing here could tell. */
  accepted: boolean | null;
  note?: string;
}

export interface UpstreamHealth {
  ckan: CkanHealth;
  resources: ResourceHealth[];
  token: TokenHealth;
  /** What stops exports from working, each naming what to fix. */
  problems: string[];
}

/** `status_show`, asked anonymously: is this a CKAN, which one, with the DataStore? */
async function statusShow(
  config: Pick<Config, "ckanBase"> & Secrets,
  upstreamFetch: UpstreamFetch,
): Promise<{ ckan: CkanHealth; problem?: string }> {
  const base = config.ckanBase;
  const ckan: CkanHealth = { base, reachable: false, version: null, datastore: null, range_filters: null };
  const url = `${base}/api/action/status_show`;
  const asked = await askStatus(url, upstreamFetch);
  if (typeof asked === "string")
    return { ckan, problem: `CKAN did not answer at ${base} (${asked}). Check CKAN_BASE_URL and that the site is up.` };
  ckan.reachable = true;
  if (asked.status >= 300 && asked.status < 400) {
    await asked.body?.cancel();
    const redact = redactorOf([config.apiToken, config.adminToken, config.linkSigningKey]);
    return { ckan, problem: redirectRefused(asked, url, redact).message };
  }
  const status = statusOf(await asked.text());
  if (status === undefined) {
    return {
      ckan,
      problem: `${url} answered HTTP ${asked.status} with something that is not CKAN's status_show. CKAN_BASE_URL must be the site's base with its mount prefix and language segment, if any (like https://open.canada.ca/data/en).`,
    };
  }
  ckan.version = status.version;
  ckan.datastore = status.extensions.includes("datastore");
  const [major = 0, minor = 0] = ckan.version.split(".").map((part) => Number.parseInt(part, 10));
  ckan.range_filters = major > 2 || (major === 2 && minor >= 12);
  if (!ckan.datastore)
    return {
      ckan,
      problem: `CKAN ${ckan.version} at ${base} runs without the DataStore (its plugins: ${status.extensions.join(", ") || "none"}): there is no table to export.`,
    };
  return { ckan };
}

/** The answer to `status_show`, or why there is none (in words). */
async function askStatus(url: string, upstreamFetch: UpstreamFetch): Promise<Response | string> {
  try {
    return await upstreamFetch(
      new Request(url, {
        headers: { accept: "application/json" },
        signal: AbortSignal.timeout(TIMEOUT_MS),
        redirect: "manual",
      }),
    );
  } catch (error) {
    return error instanceof Error && error.name === "TimeoutError"
      ? `no answer within ${TIMEOUT_MS / 1000} s`
      : "the connection failed";
  }
}

/** CKAN's version and plugins from a `status_show` answer; undefined: not one. */
function statusOf(text: string): { version: string; extensions: string[] } | undefined {
  let body: { success?: unknown; result?: { ckan_version?: unknown; extensions?: unknown } } | undefined;
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return undefined;
  }
  if (body?.success !== true || typeof body.result?.ckan_version !== "string") return undefined;
  const extensions = Array.isArray(body.result.extensions)
    ? body.result.extensions.filter((e): e is string => typeof e === "string")
    : [];
  return { version: body.result.ckan_version, extensions };
}

/** One row of the table, with or without the token: what an export's first call does. */
async function probe(client: CkanClient, resourceId: string): Promise<HttpError | undefined> {
  try {
    await client.search({ resource_id: resourceId, limit: 1, include_total: false }, AbortSignal.timeout(TIMEOUT_MS));
    return undefined;
  } catch (error) {
    return toHttpError(error);
  }
}

/**
 * What an operator needs to know before the first link fails: whether CKAN answers and which one it
 * is, whether each published alias answers datastore_search, and whether the token works. CKAN
 * answers a wrong token on a public resource as if none were sent, so the token is judged only on
 * what it alone may read: a resource that refuses an anonymous caller.
 */
export async function upstreamHealth(
  config: Pick<Config, "ckanBase" | "resources"> & Secrets & ClientSettings,
  upstreamFetch: UpstreamFetch,
): Promise<UpstreamHealth> {
  const problems: string[] = [];
  const status = await statusShow(config, upstreamFetch);
  if (status.problem !== undefined) problems.push(status.problem);
  if (status.ckan.version !== null) siteFacts(config).version = status.ckan.version;
  const token: TokenHealth = { configured: config.apiToken !== undefined, accepted: null };
  const resources: ResourceHealth[] = [];
  if (status.problem !== undefined) return { ckan: status.ckan, resources, token, problems };

  const quick = { ...config, upstreamRetries: 0, upstreamTimeoutMs: TIMEOUT_MS };
  const withToken = new CkanClient(quick, upstreamFetch);
  const anonymous = new CkanClient({ ...quick, apiToken: undefined }, upstreamFetch);
  const aliases = [...config.resources].slice(0, MAX_CHECKED);
  await Promise.all(
    aliases.map(async ([name, resourceId]) => {
      const [asWorker, asAnyone] = await Promise.all([
        probe(withToken, resourceId),
        token.configured ? probe(anonymous, resourceId) : undefined,
      ]);
      const entry: ResourceHealth = {
        name,
        resource_id: resourceId,
        ok: asWorker === undefined,
        private: token.configured ? asAnyone?.status === 403 : null,
      };
      if (asWorker !== undefined) {
        entry.error = withToken.redact(asWorker.message);
        if (asWorker.status === 403) entry.private = true;
        const fix =
          asWorker.status === 403
            ? token.configured
              ? "CKAN refused it with the configured token: the token is wrong or expired, or its user may not read this resource (wrangler secret put CKAN_API_TOKEN)."
              : "It is private: set a token whose user may read it (wrangler secret put CKAN_API_TOKEN)."
            : asWorker.status === 404
              ? "CKAN has no DataStore table with that id: fix the alias in RESOURCES (npm run setup lists the tables)."
              : "";
        problems.push(`Alias ${name} (${resourceId}) does not answer: ${entry.error}${fix === "" ? "" : ` ${fix}`}`);
      }
      resources.push(entry);
    }),
  );
  resources.sort((a, b) => a.name.localeCompare(b.name));
  if (config.resources.size > MAX_CHECKED)
    problems.push(`Only the first ${MAX_CHECKED} of ${config.resources.size} aliases were checked.`);
  if (token.configured) {
    const refused = resources.some((r) => !r.ok && r.private === true);
    const unlocked = resources.some((r) => r.ok && r.private === true);
    token.accepted = unlocked ? true : refused ? false : null;
    if (token.accepted === null) {
      token.note =
        "No published resource is private, and CKAN answers a wrong token on a public resource as if none were sent: nothing here can tell whether CKAN accepts it.";
    }
  }
  return { ckan: status.ckan, resources, token, problems };
}
