// `npm run setup`: checks a live CKAN and writes the production settings into wrangler.toml. A
// second run adds to what is published; only --remove (or the picker's own question) takes away.
//   npm run setup -- --ckan <site base, language segment included> [--resource <alias>=<id or resource page URL>]...
//                    [--remove <alias>]... [--snapshot <alias>=<cron>]... [--yes] [--config <wrangler.toml>]
// The API token comes from CKAN_API_TOKEN or a hidden prompt, never from the command line, and is
// never written anywhere: it only lets setup check that every chosen resource answers.
// Every failure is a line or two naming what to fix, exit 1, and wrangler.toml left as it was.
import { randomBytes } from "node:crypto";
import { accessSync, constants, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { createInterface, type Interface } from "node:readline/promises";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual, parseArgs } from "node:util";
import { UUID_PATTERN } from "../src/config/settings.ts";
import { jobCrons, setProductionVars, type JobRecord, type SnapshotJob } from "./wrangler-toml.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const TIMEOUT_MS = 15_000;
const ALIAS = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const CRON = /^[0-9*,/A-Za-z?#LW-]+( [0-9*,/A-Za-z?#LW-]+){4}$/;

class SetupError extends Error {}

function fail(message: string): never {
  throw new SetupError(message);
}

// ---- talking to CKAN --------------------------------------------------------------------------

interface Site {
  base: string;
  token: string | undefined;
}

interface Answer {
  status: number;
  contentType: string;
  /** The parsed JSON body, or undefined when the body is not JSON. */
  json: unknown;
}

async function call(
  site: Site,
  action: string,
  init: { query?: Record<string, string>; body?: unknown },
): Promise<Answer> {
  const url = new URL(`${site.base}/api/action/${action}`);
  for (const [name, value] of Object.entries(init.query ?? {})) url.searchParams.set(name, value);
  const headers: Record<string, string> = { accept: "application/json" };
  if (site.token !== undefined) headers["authorization"] = site.token;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(url, {
      method: init.body === undefined ? "GET" : "POST",
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
      redirect: "follow",
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const why =
      (error as Error).name === "TimeoutError"
        ? `no answer within ${TIMEOUT_MS / 1000} s`
        : (cause?.code ?? cause?.message ?? (error as Error).message);
    fail(
      `cannot reach ${site.base} (${why}).\nCheck the address (scheme, host, port) and that this machine can reach it.`,
    );
  }
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, contentType: response.headers.get("content-type") ?? "no content type", json };
}

/**
 * CKAN's error message in an action's answer (the envelope's error, or the bare string of a 400),
 * without its final period: it is always quoted inside a sentence of ours.
 */
function ckanMessage(answer: Answer): string {
  const error = (answer.json as { error?: Record<string, unknown> } | undefined)?.error;
  const message =
    typeof answer.json === "string"
      ? answer.json
      : error === undefined
        ? `HTTP ${answer.status}`
        : typeof error["message"] === "string"
          ? error["message"]
          : JSON.stringify(error).slice(0, 200);
  return message.replace(/\.$/, "");
}

function result<T>(answer: Answer): T | undefined {
  const body = answer.json as { success?: unknown; result?: unknown } | undefined;
  return answer.status === 200 && body?.success === true ? (body.result as T) : undefined;
}

async function checkSite(site: Site): Promise<string> {
  const answer = await call(site, "status_show", {});
  const status = result<{ ckan_version?: unknown; extensions?: unknown }>(answer);
  if (status === undefined || typeof status.ckan_version !== "string") {
    fail(
      `${site.base} does not answer as a CKAN site (status_show: HTTP ${answer.status}, ${answer.contentType}).\n` +
        "Give the address CKAN's API lives under, with the site's path and language segment if it has them (e.g. https://data.example.org/data/en).",
    );
  }
  const extensions = Array.isArray(status.extensions) ? status.extensions : [];
  if (!extensions.includes("datastore")) {
    fail(
      `${site.base} is CKAN ${status.ckan_version} without the DataStore (no "datastore" plugin in status_show): it has no tables to export.`,
    );
  }
  return status.ckan_version;
}

interface Checked {
  alias: string;
  id: string;
  /** What resource_show calls it, when it says. */
  name: string | undefined;
  /** Readable without the token? */
  public: boolean;
}

/** `kept`: published by an earlier run against another site, so its failure says how to let it go. */
async function checkResource(site: Site, alias: string, id: string, kept = false): Promise<Checked> {
  const search = (token: string | undefined) =>
    call({ ...site, token }, "datastore_search", { body: { resource_id: id, limit: 0 } });
  const answer = await search(site.token);
  if (answer.status === 404) {
    fail(
      `${alias} = ${id}: not a table in ${site.base}'s DataStore (CKAN: ${ckanMessage(answer)}).\n` +
        (kept
          ? `It was published for the CKAN_BASE_URL before: add --remove ${alias}, or --resource ${alias}=<its id on this site>.`
          : "Check the id, and that the resource's data was loaded into the DataStore."),
    );
  }
  if (answer.status === 403) {
    fail(
      site.token === undefined
        ? `${alias} = ${id} is private: CKAN needs a token to read it.\nSet CKAN_API_TOKEN (or run setup in a terminal to be asked) with a token of a user who may read it.`
        : `${alias} = ${id}: CKAN refused the token (${ckanMessage(answer)}).\nCheck CKAN_API_TOKEN: it must be a valid API token of a user who may read this resource.`,
    );
  }
  if (result(answer) === undefined)
    fail(`${alias} = ${id}: datastore_search answered HTTP ${answer.status} (${ckanMessage(answer)}).`);
  // Readable without the token? A public resource answers anyone, a wrong token included.
  const anonymous = site.token === undefined ? answer : await search(undefined);
  const shown = result<{ name?: unknown }>(await call(site, "resource_show", { query: { id } }));
  return {
    alias,
    id,
    name: typeof shown?.name === "string" ? shown.name : undefined,
    public: anonymous.status === 200,
  };
}

// ---- choosing tables ----------------------------------------------------------------------------

/** A resource id, from the id itself or a resource page URL (…/dataset/<name>/resource/<id>). */
function resourceId(text: string): string | undefined {
  const trimmed = text.trim();
  if (UUID_PATTERN.test(trimmed)) return trimmed.toLowerCase();
  const match = /\/resource\/([0-9a-f-]{36})(?:[/?#]|$)/i.exec(trimmed);
  return match?.[1] !== undefined && UUID_PATTERN.test(match[1]) ? match[1].toLowerCase() : undefined;
}

function parseResourceArg(arg: string): [string, string] {
  const eq = arg.indexOf("=");
  const alias = eq < 0 ? "" : arg.slice(0, eq);
  const id = eq < 0 ? undefined : resourceId(arg.slice(eq + 1));
  if (!ALIAS.test(alias))
    fail(
      `--resource "${arg}": start with an alias (letters, digits, _ . -), then =, then the resource id or page URL.`,
    );
  if (id === undefined)
    fail(
      `--resource ${alias}=…: "${arg.slice(eq + 1)}" is neither a resource id nor a resource page URL (…/dataset/<name>/resource/<id>).`,
    );
  return [alias, id];
}

function parseSnapshotArg(arg: string, aliases: ReadonlySet<string>): SnapshotJob {
  const eq = arg.indexOf("=");
  const alias = arg.slice(0, Math.max(0, eq));
  const cron = arg.slice(eq + 1).trim();
  if (!aliases.has(alias))
    fail(`--snapshot "${arg}": "${alias}" is not a published alias (${[...aliases].join(", ") || "none"}).`);
  if (!CRON.test(cron))
    fail(`--snapshot ${alias}=…: "${cron}" is not a cron expression of five fields (e.g. "0 3 * * *").`);
  return { name: `${alias}-snapshot`, resource: alias, formats: ["csv"], cron, keep: 30 };
}

function slug(text: string): string {
  return (
    text
      .toLowerCase()
      .normalize("NFKD")
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 40) || "table"
  );
}

/** `wanted` if nobody has it, else the first of wanted-2, wanted-3, … that is free. */
function freeAlias(wanted: string, taken: ReadonlySet<string>): string {
  if (!taken.has(wanted)) return wanted;
  for (let n = 2; ; n++) if (!taken.has(`${wanted.slice(0, 60)}-${n}`)) return `${wanted.slice(0, 60)}-${n}`;
}

interface Found {
  id: string;
  label: string;
  suggested: string;
}

async function searchDatasets(site: Site, words: string): Promise<Found[]> {
  const query: Record<string, string> = { q: words, rows: "20" };
  if (site.token !== undefined) query["include_private"] = "true";
  const found = result<{
    results?: {
      title?: string;
      name?: string;
      resources?: { id: string; name?: string; datastore_active?: boolean }[];
    }[];
  }>(await call(site, "package_search", { query }));
  return (found?.results ?? []).flatMap((dataset) =>
    (dataset.resources ?? [])
      .filter((resource) => resource.datastore_active === true)
      .map((resource) => ({
        id: resource.id,
        label: `${dataset.title ?? dataset.name ?? "?"} / ${resource.name ?? resource.id}`,
        suggested: slug(resource.name ?? dataset.name ?? "table"),
      })),
  );
}

/** How many of the DataStore's tables `tables` names (two small calls each); words narrow the rest. */
const TABLES_LISTED = 30;

/** A table by its resource id, named as its page names it: "dataset title / resource name". */
async function describeTable(site: Site, id: string, titles: Map<string, Promise<string | undefined>>): Promise<Found> {
  const resource = result<{ name?: unknown; package_id?: unknown }>(
    await call(site, "resource_show", { query: { id } }),
  );
  const name = typeof resource?.name === "string" && resource.name !== "" ? resource.name : undefined;
  const packageId = typeof resource?.package_id === "string" ? resource.package_id : undefined;
  let title: string | undefined;
  if (packageId !== undefined) {
    let pending = titles.get(packageId);
    if (pending === undefined) {
      pending = call(site, "package_show", { query: { id: packageId } }).then((answer) => {
        const dataset = result<{ title?: unknown; name?: unknown }>(answer);
        return typeof dataset?.title === "string" && dataset.title !== ""
          ? dataset.title
          : typeof dataset?.name === "string"
            ? dataset.name
            : undefined;
      });
      titles.set(packageId, pending);
    }
    title = await pending;
  }
  const label = name === undefined ? id : `${title ?? "?"} / ${name}`;
  return { id, label, suggested: slug(name ?? "table") };
}

async function datastoreTables(site: Site): Promise<Found[]> {
  const tables = result<{ records?: { name?: string; alias_of?: string | null }[] }>(
    await call(site, "datastore_search", { body: { resource_id: "_table_metadata", limit: 1000 } }),
  );
  const ids = (tables?.records ?? [])
    .filter((row) => row.alias_of === null && typeof row.name === "string" && UUID_PATTERN.test(row.name))
    .map((row) => row.name as string);
  if (ids.length > TABLES_LISTED)
    console.log(`  ${ids.length} tables; the first ${TABLES_LISTED} (type words to search for the others):`);
  const titles = new Map<string, Promise<string | undefined>>();
  const found: Found[] = [];
  // A few at a time: a portal's API is shared with everyone else's.
  for (let i = 0; i < Math.min(ids.length, TABLES_LISTED); i += 5) {
    found.push(
      ...(await Promise.all(ids.slice(i, Math.min(i + 5, TABLES_LISTED)).map((id) => describeTable(site, id, titles)))),
    );
  }
  return found;
}

/** The picker's own step for what is published already: which aliases to take away, if any. */
async function askRemovals(
  published: ReadonlyMap<string, string>,
  jobs: readonly JobRecord[],
  ask: Prompter,
): Promise<string[]> {
  console.log(`\nPublished now (${published.size}):`);
  for (const [alias, id] of published) {
    const scheduled = jobs.filter((job) => job.resource === alias).map((job) => job.name);
    console.log(`  ${alias} = ${id}${scheduled.length > 0 ? `  (snapshot job ${scheduled.join(", ")})` : ""}`);
  }
  for (;;) {
    const input = (
      await ask.question(
        "Aliases to stop publishing (separated by spaces; their snapshot jobs go with them), Enter to keep them all: ",
      )
    ).trim();
    const names = input === "" ? [] : input.split(/[\s,]+/);
    const unknown = names.filter((name) => !published.has(name));
    if (unknown.length === 0) return [...new Set(names)];
    console.log(`  not published: ${unknown.join(", ")}.`);
  }
}

async function pickInteractively(
  site: Site,
  ask: Prompter,
  published: ReadonlySet<string>,
): Promise<Map<string, string>> {
  const chosen = new Map<string, string>();
  const titles = new Map<string, Promise<string | undefined>>();
  console.log(
    "\nTables to publish. Type words to search datasets by name, `tables` to list the DataStore's tables,\n" +
      "a resource id or resource page URL to take it, or press Enter when done.",
  );
  for (;;) {
    const input = (await ask.question(chosen.size === 0 ? "> " : `> (${[...chosen.keys()].join(", ")}) `)).trim();
    if (input === "") break;
    let candidates: Found[];
    const direct = resourceId(input);
    if (direct !== undefined) candidates = [await describeTable(site, direct, titles)];
    else if (input === "tables") candidates = await datastoreTables(site);
    else candidates = await searchDatasets(site, input);
    if (candidates.length === 0) {
      console.log("  nothing with DataStore data found; try other words, or `tables`.");
      continue;
    }
    let pick = candidates[0];
    if (candidates.length > 1) {
      candidates.forEach((candidate, i) =>
        console.log(`  ${i + 1}. ${candidate.label}${candidate.label === candidate.id ? "" : `  (${candidate.id})`}`),
      );
      const number = Number((await ask.question("  number to publish (Enter to search again): ")).trim());
      pick = Number.isInteger(number) ? candidates[number - 1] : undefined;
    }
    if (pick === undefined) continue;
    const already = [...chosen].find(([, id]) => id === pick.id)?.[0];
    if (already !== undefined) {
      console.log(`  chosen already, as ${already}.`);
      continue;
    }
    const taken = new Set([...published, ...chosen.keys()]);
    let suggested = freeAlias(pick.suggested, taken);
    for (;;) {
      const alias = (await ask.question(`  alias for ${pick.label} [${suggested}]: `)).trim() || suggested;
      if (!ALIAS.test(alias)) {
        console.log("  an alias is letters, digits, _ . - (starting with a letter or digit).");
      } else if (taken.has(alias)) {
        suggested = freeAlias(alias, taken);
        console.log(
          `  ${alias} is taken${published.has(alias) ? " (published already)" : ""}: Enter takes ${suggested}, or type another.`,
        );
      } else {
        chosen.set(alias, pick.id);
        break;
      }
    }
  }
  return chosen;
}

/** Reads a line from the terminal without echoing it (before any readline interface exists). */
function hiddenQuestion(prompt: string): Promise<string> {
  const input = process.stdin;
  process.stdout.write(prompt);
  input.setRawMode(true);
  input.resume();
  return new Promise((resolve) => {
    let text = "";
    const onData = (chunk: Buffer): void => {
      for (const char of chunk.toString("utf8")) {
        if (char === "\r" || char === "\n" || char === "\u0004") {
          input.setRawMode(false);
          input.pause();
          input.off("data", onData);
          process.stdout.write("\n");
          resolve(text);
          return;
        }
        if (char === "\u0003") process.exit(130);
        text = char === "\u007f" ? text.slice(0, -1) : text + char;
      }
    };
    input.on("data", onData);
  });
}

/**
 * Questions on stdin: a terminal, or lines piped in (for scripts). Lines are read through one
 * iterator, which keeps those that arrive before their question; input that ends early writes nothing.
 */
class Prompter {
  private lines: AsyncIterator<string> | undefined;
  private readline: Interface | undefined;

  async question(prompt: string): Promise<string> {
    if (this.lines === undefined) {
      this.readline = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
      this.lines = this.readline[Symbol.asyncIterator]();
    }
    process.stdout.write(prompt);
    const next = await this.lines.next();
    if (next.done === true) fail("the input ended before setup was done: nothing written.");
    if (!process.stdin.isTTY) process.stdout.write("\n");
    return next.value;
  }

  close(): void {
    this.readline?.close();
  }
}

// ---- writing wrangler.toml ---------------------------------------------------------------------

interface RawConfig {
  vars?: Record<string, unknown>;
  triggers?: { crons?: string[] };
  r2_buckets?: { bucket_name?: string }[];
  name?: string;
}

async function readToml(path: string): Promise<RawConfig> {
  // wrangler's own reader: what deploys is what is checked. Plain objects (its tables may have no
  // prototype), so that a comparison sees only the values.
  const { experimental_readRawConfig } = await import("wrangler");
  return JSON.parse(JSON.stringify(experimental_readRawConfig({ config: path }).rawConfig)) as RawConfig;
}

/** The aliases published now: [vars.RESOURCES] (a TOML table, or JSON text as `--var` takes it). */
function publishedResources(raw: RawConfig, where: string): Map<string, string> {
  let value = raw.vars?.["RESOURCES"];
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      fail(`RESOURCES in ${where} is not valid JSON: fix it by hand (or empty it), then run setup again.`);
    }
  }
  const published = new Map<string, string>();
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    for (const [alias, id] of Object.entries(value)) if (typeof id === "string") published.set(alias, id);
  }
  return published;
}

/** The snapshot jobs in SNAPSHOT_JOBS now; undefined when it says nothing setup can edit. */
function publishedJobs(raw: RawConfig): JobRecord[] | undefined {
  let value = raw.vars?.["SNAPSHOT_JOBS"];
  if (value === undefined || value === "") return [];
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  return Array.isArray(value) && value.every((job) => job !== null && typeof job === "object" && !Array.isArray(job))
    ? (value as JobRecord[])
    : undefined;
}

/** Writes beside the file, reads it back with wrangler's reader, and only then replaces it. */
async function writeConfig(
  path: string,
  base: string,
  resources: Map<string, string>,
  jobs: JobRecord[] | undefined,
  crons: string[],
): Promise<RawConfig> {
  const before = readFileSync(path, "utf8");
  const original = await readToml(path);
  const after = setProductionVars(before, { base, resources, jobs, crons });
  const temporary = join(dirname(path), `.wrangler-setup-${randomBytes(4).toString("hex")}.toml`);
  try {
    writeFileSync(temporary, after);
    const written = await readToml(temporary);
    const expected: RawConfig = JSON.parse(JSON.stringify(original)) as RawConfig;
    expected.vars = { ...original.vars, CKAN_BASE_URL: base, RESOURCES: Object.fromEntries(resources) };
    if (jobs !== undefined) {
      expected.vars["SNAPSHOT_JOBS"] = written.vars?.["SNAPSHOT_JOBS"];
      expected.triggers = { ...original.triggers, crons };
      if (!isDeepStrictEqual(JSON.parse(String(written.vars?.["SNAPSHOT_JOBS"])), jobs))
        fail(`could not write SNAPSHOT_JOBS into ${path}: edit it by hand.`);
    }
    if (!isDeepStrictEqual(written, expected))
      fail(`could not edit ${path} safely (its layout is unusual): set CKAN_BASE_URL and [vars.RESOURCES] by hand.`);
    renameSync(temporary, path);
    return written;
  } finally {
    rmSync(temporary, { force: true });
  }
}

/** Rows of text in aligned columns, two spaces apart. */
function columns(rows: readonly string[][]): string[] {
  const widths = rows.reduce<number[]>((w, row) => row.map((cell, i) => Math.max(w[i] ?? 0, cell.length)), []);
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd(),
  );
}

// ---- the command --------------------------------------------------------------------------------

const USAGE = `usage: npm run setup -- --ckan <site base> [--resource <alias>=<id or page URL>]... [--remove <alias>]...
                        [--snapshot <alias>=<cron>]... [--yes] [--config <wrangler.toml>]

Checks a CKAN site and the tables to publish against it, then writes CKAN_BASE_URL, [vars.RESOURCES]
and SNAPSHOT_JOBS (with their [triggers] crons) into wrangler.toml. A second run adds to what is
published and keeps the rest; only --remove (or the question asked without --yes) takes an alias away.

  --ckan <url>                   the site's base, path and language segment included
                                 (what comes before /api/action/, e.g. https://data.example.org/data/en)
  --resource <alias>=<id|URL>    publish a table as <alias>: a resource id or resource page URL (repeatable);
                                 an alias published already now names this table
  --remove <alias>               stop publishing <alias>, and remove its snapshot jobs (repeatable)
  --snapshot <alias>=<cron>      a CSV snapshot of <alias> to R2 on a five-field cron, e.g. "0 3 * * *" (repeatable)
  --yes, -y                      ask nothing (scripts and CI)
  --config <file>                the wrangler.toml to edit (default: the project's)
  --help, -h                     this text

Without --yes setup asks: the token, what to stop publishing, tables to add (search by words,
\`tables\`, or paste an id), a schedule for each, and a last yes before it writes.
The API token (private tables only) comes from CKAN_API_TOKEN or a hidden prompt, never an argument.
npm's echo of the command shows resource ids as *** (npm hides anything shaped like a UUID);
setup prints them itself.`;

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        ckan: { type: "string" },
        resource: { type: "string", multiple: true },
        remove: { type: "string", multiple: true },
        snapshot: { type: "string", multiple: true },
        yes: { type: "boolean", short: "y" },
        config: { type: "string" },
        token: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    fail(`${(error as Error).message}\nnpm run setup -- --help prints the options.`);
  }
  const options = parsed.values;
  if (options.help === true) {
    console.log(USAGE);
    return;
  }
  if (options.token !== undefined)
    fail(
      "the token is never an argument (it would stay in your shell history): set CKAN_API_TOKEN, or run setup in a terminal to be asked.",
    );
  if (options.ckan === undefined)
    fail(
      "--ckan <url> is missing: your portal's address, with its language segment if it has one (e.g. https://data.example.org/data/en).",
    );
  let url: URL;
  try {
    url = new URL(options.ckan);
  } catch {
    fail(`--ckan "${options.ckan}" is not a URL: give the portal's address, e.g. https://data.example.org/data/en.`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    fail(`--ckan "${options.ckan}": the address must start with https:// (or http://).`);
  // A pasted API address is cut back to the site base the worker adds /api/action/... to.
  const base = `${url.origin}${url.pathname.replace(/\/api(\/\d+)?(\/action(\/.*)?)?\/?$/, "").replace(/\/+$/, "")}`;
  const config = options.config ?? join(ROOT, "wrangler.toml");
  const interactive = options.yes !== true;
  try {
    accessSync(config, constants.R_OK | constants.W_OK);
  } catch (error) {
    fail(
      `${config} cannot be read and written (${(error as NodeJS.ErrnoException).code ?? String(error)}): run setup in the project, or name the file with --config.`,
    );
  }
  const near = relative(process.cwd(), config);
  const where = near === "" || near.startsWith("..") ? config : near;

  // What is published now: a second run adds to it, and takes away only what it is told to.
  const current = await readToml(config);
  const published = publishedResources(current, where);
  const previousJobs = publishedJobs(current);
  const previousBase = typeof current.vars?.["CKAN_BASE_URL"] === "string" ? current.vars["CKAN_BASE_URL"] : undefined;

  const given = new Map<string, string>();
  for (const arg of options.resource ?? []) {
    const [alias, id] = parseResourceArg(arg);
    if (given.has(alias)) fail(`--resource ${alias} is given twice: one alias, one table.`);
    given.set(alias, id);
  }
  const removed = new Set<string>();
  for (const alias of options.remove ?? []) {
    if (!published.has(alias))
      fail(
        `--remove ${alias}: ${where} publishes no alias ${alias} (${published.size === 0 ? "it publishes none" : `it publishes ${[...published.keys()].join(", ")}`}).`,
      );
    if (given.has(alias)) fail(`--remove ${alias} and --resource ${alias}=… both given: keep one.`);
    removed.add(alias);
  }

  const ask = interactive ? new Prompter() : undefined;
  try {
    let token = process.env["CKAN_API_TOKEN"]?.trim() || undefined;
    const site: Site = { base, token };
    const version = await checkSite(site);
    console.log(`CKAN ${version} at ${base}, with the DataStore.`);

    if (token === undefined && ask !== undefined) {
      const prompt = "CKAN API token, to publish private tables (input hidden; Enter for none): ";
      // In a terminal the token is typed unseen; piped in, it is a line like the others.
      token = (process.stdin.isTTY ? await hiddenQuestion(prompt) : await ask.question(prompt)).trim() || undefined;
      site.token = token;
    }

    if (ask !== undefined && given.size === 0 && removed.size === 0) {
      if (published.size > 0)
        for (const alias of await askRemovals(published, previousJobs ?? [], ask)) removed.add(alias);
      const kept = new Set([...published.keys()].filter((alias) => !removed.has(alias)));
      for (const [alias, id] of await pickInteractively(site, ask, kept)) given.set(alias, id);
    }

    // The result: what was published, less what is removed, with what is given added or updated.
    const resources = new Map([...published].filter(([alias]) => !removed.has(alias)));
    for (const [alias, id] of given) resources.set(alias, id);
    if (resources.size === 0)
      fail(
        `no table chosen: add --resource <alias>=<resource id or resource page URL>${interactive ? "" : " (or run without --yes to search)"}.`,
      );

    // Tables published before were checked then, on this site; on another site they are checked again.
    const moved = previousBase !== undefined && previousBase !== base;
    const checked: Checked[] = [];
    for (const [alias, id] of resources)
      if (given.has(alias) || moved) checked.push(await checkResource(site, alias, id, moved && !given.has(alias)));
    for (const table of checked)
      console.log(
        `  ${table.alias} = ${table.id}  ${table.name ?? ""}${table.public ? "" : "  (private: read with the token)"}`,
      );
    const anyPrivate = checked.some((table) => !table.public);
    if (token !== undefined && checked.length > 0 && !anyPrivate) {
      console.log(
        "  The token was not checked: every chosen table is public, and CKAN answers a wrong token there as if none were sent.",
      );
    }

    // Snapshot jobs: a removed alias takes its jobs with it; --snapshot (or the question) adds or replaces one.
    const wanted: SnapshotJob[] = [];
    if (options.snapshot !== undefined) {
      const aliases = new Set(resources.keys());
      for (const arg of options.snapshot) wanted.push(parseSnapshotArg(arg, aliases));
    } else if (ask !== undefined) {
      for (const alias of given.keys()) {
        for (;;) {
          const cron = (
            await ask.question(
              `Snapshot ${alias} to R2 on a schedule? A cron expression (e.g. 0 3 * * *), Enter for none: `,
            )
          ).trim();
          if (cron === "") break;
          if (CRON.test(cron)) {
            wanted.push(parseSnapshotArg(`${alias}=${cron}`, new Set(resources.keys())));
            break;
          }
          console.log(`  "${cron}" is not a cron expression of five fields (minute hour day month weekday).`);
        }
      }
    }
    const dropped = (previousJobs ?? []).filter(
      (job) => typeof job["resource"] === "string" && removed.has(job["resource"]),
    );
    let jobs: JobRecord[] | undefined;
    if (wanted.length > 0 || dropped.length > 0) {
      if (previousJobs === undefined)
        fail(
          `SNAPSHOT_JOBS in ${where} is not a JSON list of jobs setup can edit: fix it by hand, then run setup again.`,
        );
      jobs = previousJobs.filter((job) => !dropped.includes(job));
      for (const job of wanted) {
        const at = jobs.findIndex((old) => old["name"] === job.name);
        if (at >= 0) jobs[at] = job;
        else jobs.push(job);
      }
    }
    const finalJobs = jobs ?? previousJobs ?? [];
    // A job without a cron runs on every trigger: the crons there already stay for it.
    const everyTrigger = finalJobs.some((job) => typeof job["cron"] !== "string");
    const crons = [...new Set([...jobCrons(finalJobs), ...(everyTrigger ? (current.triggers?.crons ?? []) : [])])];
    const droppedText =
      dropped.length > 0
        ? ` (and snapshot job${dropped.length > 1 ? "s" : ""} ${dropped.map((job) => String(job["name"])).join(", ")} with ${dropped.length > 1 ? "them" : "it"})`
        : "";

    if (ask !== undefined) {
      const changes = [
        given.size > 0 ? `publish ${[...given.keys()].join(", ")}` : "",
        removed.size > 0 ? `stop publishing ${[...removed].join(", ")}${droppedText}` : "",
      ].filter((text) => text !== "");
      const yes = (
        await ask.question(
          `${changes.length > 0 ? `${changes.join("; ")}: w` : "W"}rite CKAN_BASE_URL, RESOURCES${jobs ? ", SNAPSHOT_JOBS and [triggers]" : ""} into ${where}? [y/N] `,
        )
      )
        .trim()
        .toLowerCase();
      if (yes !== "y" && yes !== "yes") fail(`nothing written: ${where} is as it was.`);
    }
    const written = await writeConfig(config, base, resources, jobs, crons);
    const bucket = written.r2_buckets?.[0]?.bucket_name ?? "datastore-export-snapshots";
    const names = new Map(checked.map((table) => [table.alias, table.name ?? ""]));
    const state = (alias: string): string =>
      !given.has(alias)
        ? "kept"
        : !published.has(alias)
          ? "added"
          : published.get(alias) === given.get(alias)
            ? "unchanged"
            : `now this table (was ${published.get(alias)})`;
    console.log(`\nWrote ${where}: CKAN_BASE_URL = ${base}`);
    console.log(
      columns([
        ["alias", "resource id", "", "name"],
        ...[...resources].map(([alias, id]) => [alias, id, state(alias), names.get(alias) ?? ""]),
      ])
        .map((line) => `  ${line}`)
        .join("\n"),
    );
    if (removed.size > 0) console.log(`  no longer published: ${[...removed].join(", ")}${droppedText}`);
    if (finalJobs.length > 0) {
      console.log(`Snapshot jobs (SNAPSHOT_JOBS), run by the [triggers] crons ${crons.join(", ") || "(none)"}:`);
      const rows = finalJobs.map((job) => [
        String(job["name"]),
        String(job["resource"] ?? job["resource_id"] ?? ""),
        Array.isArray(job["formats"]) ? job["formats"].join(",") : "csv",
        typeof job["cron"] === "string" ? job["cron"] : "every trigger",
      ]);
      console.log(
        columns([["job", "alias", "formats", "cron"], ...rows])
          .map((line) => `  ${line}`)
          .join("\n"),
      );
    } else {
      console.log("No snapshot jobs (add one with --snapshot <alias>=<cron>).");
    }
    console.log(`Next:
  1. npx wrangler secret put CKAN_API_TOKEN   ${anyPrivate ? "(needed: a chosen table is private)" : checked.length < resources.size ? "(needed if a published table is private)" : "(only if you will publish private tables)"}
  2. npx wrangler r2 bucket create ${bucket}   (where snapshots land)
  3. npx wrangler deploy
  4. open https://<your worker>/health: 200 once the worker reaches ${base}`);
  } finally {
    ask?.close();
  }
}

try {
  await main();
} catch (error) {
  if (!(error instanceof SetupError)) throw error;
  console.error(`setup: ${error.message}`);
  process.exitCode = 1;
}
