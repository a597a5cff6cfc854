// The edit `npm run setup` makes to wrangler.toml: CKAN_BASE_URL in [vars], the [vars.RESOURCES]
// table, and optionally SNAPSHOT_JOBS with the [triggers] crons, everything else left as it was,
// comments included. A careful edit of lines, not a TOML library: wrangler's own config patcher
// refuses a TOML file with comments, and the TOML libraries that write files (smol-toml, @iarna/toml)
// drop them. setup.ts then reads the result back with wrangler's own reader before it replaces the file.

export interface ProductionVars {
  /** CKAN_BASE_URL, no trailing slash. */
  base: string;
  /** alias -> resource id, in the order to write them. */
  resources: ReadonlyMap<string, string>;
  /** Snapshot jobs to write as SNAPSHOT_JOBS (their crons become [triggers]); undefined leaves both as they are. */
  jobs?: readonly JobRecord[];
  /** The [triggers] crons written with the jobs; default: the jobs' own. */
  crons?: readonly string[];
}

/** A snapshot job as SNAPSHOT_JOBS holds it: those setup makes, and any an operator wrote (all keys kept). */
export type JobRecord = Readonly<Record<string, unknown>>;

/** The job setup makes for `--snapshot alias=cron`. */
export type SnapshotJob = {
  name: string;
  resource: string;
  formats: string[];
  cron: string;
  keep: number;
};

/** The distinct crons of these jobs, in order. */
export function jobCrons(jobs: readonly JobRecord[]): string[] {
  return [...new Set(jobs.flatMap((job) => (typeof job["cron"] === "string" ? [job["cron"]] : [])))];
}

const HEADER = /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/;

function headerName(line: string): string | undefined {
  return HEADER.exec(line)?.[1];
}

/** A TOML basic string: JSON's escapes are TOML's. */
export function tomlString(text: string): string {
  return JSON.stringify(text);
}

/** Where a table's body ends: the next header, or the end of the file. */
function sectionEnd(lines: readonly string[], header: number): number {
  for (let i = header + 1; i < lines.length; i++) if (headerName(lines[i] ?? "") !== undefined) return i;
  return lines.length;
}

function findHeader(lines: readonly string[], name: string): number {
  return lines.findIndex((line) => headerName(line) === name);
}

/** The lines a `key = value` starting at `start` takes: a multi-line string or array runs on. */
function valueExtent(lines: readonly string[], start: number): number {
  const value = (lines[start] ?? "").replace(/^[^=]*=\s*/, "");
  for (const quote of ["'''", '"""']) {
    if (value.startsWith(quote) && value.indexOf(quote, 3) < 0) {
      for (let i = start + 1; i < lines.length; i++) if ((lines[i] ?? "").includes(quote)) return i + 1;
    }
  }
  if (value.startsWith("[") && !value.includes("]")) {
    for (let i = start + 1; i < lines.length; i++) if ((lines[i] ?? "").includes("]")) return i + 1;
  }
  return start + 1;
}

function findKey(lines: readonly string[], from: number, to: number, key: string): number {
  const pattern = new RegExp(`^\\s*${key}\\s*=`);
  for (let i = from; i < to; i++) if (pattern.test(lines[i] ?? "")) return i;
  return -1;
}

const isComment = (line: string | undefined): boolean => /^\s*#/.test(line ?? "");
const isBlank = (line: string | undefined): boolean => (line ?? "").trim() === "";

/** Sets `key` in the section starting at `header`; a new key goes where `position` says. */
function setKey(lines: string[], header: number, key: string, text: string[], position: (end: number) => number): void {
  const end = sectionEnd(lines, header);
  const at = findKey(lines, header + 1, end, key);
  if (at >= 0) lines.splice(at, valueExtent(lines, at) - at, ...text);
  else lines.splice(position(end), 0, ...text);
}

/** The start of the comments and blank lines right above line `index` (they belong to what follows). */
function leadingBlock(lines: readonly string[], index: number): number {
  let i = index;
  while (i > 0 && (isComment(lines[i - 1]) || isBlank(lines[i - 1]))) i--;
  return i;
}

export function setProductionVars(toml: string, vars: ProductionVars): string {
  const newline = toml.includes("\r\n") ? "\r\n" : "\n";
  const lines = toml.split(/\r?\n/);

  let varsHeader = findHeader(lines, "vars");
  if (varsHeader < 0) {
    // No [vars] yet: before the first table, after the top-level keys.
    const first = lines.findIndex((line) => headerName(line) !== undefined);
    const at = first < 0 ? lines.length : leadingBlock(lines, first);
    lines.splice(at, 0, "[vars]", "");
    varsHeader = at;
  }
  // CKAN_BASE_URL first in [vars], after the comments that open the table (they explain it).
  setKey(lines, varsHeader, "CKAN_BASE_URL", [`CKAN_BASE_URL = ${tomlString(vars.base)}`], () => {
    let i = varsHeader + 1;
    while (isComment(lines[i])) i++;
    return i;
  });

  // RESOURCES lives in its own table; an inline one in [vars] would clash with it.
  const inline = findKey(lines, varsHeader + 1, sectionEnd(lines, varsHeader), "RESOURCES");
  if (inline >= 0) lines.splice(inline, valueExtent(lines, inline) - inline);

  if (vars.jobs !== undefined) {
    const text =
      vars.jobs.length === 0
        ? ["SNAPSHOT_JOBS = '[]'"]
        : [
            "SNAPSHOT_JOBS = '''",
            "[",
            ...vars.jobs.map((job, i) => `  ${JSON.stringify(job)}${i < vars.jobs!.length - 1 ? "," : ""}`),
            "]",
            "'''",
          ];
    // A new SNAPSHOT_JOBS goes after the last key of [vars] and the comments right below it.
    setKey(lines, varsHeader, "SNAPSHOT_JOBS", text, (end) => {
      let last = varsHeader;
      for (let i = varsHeader + 1; i < end; i++)
        if (!isComment(lines[i]) && !isBlank(lines[i])) last = valueExtent(lines, i) - 1;
      let at = last + 1;
      while (isComment(lines[at]) && at < end) at++;
      return at;
    });
  }

  const entries = [...vars.resources].map(([alias, id]) => `${alias} = ${tomlString(id)}`);
  let resourcesHeader = findHeader(lines, "vars.RESOURCES");
  if (resourcesHeader < 0) {
    const afterVars = sectionEnd(lines, varsHeader);
    const at = afterVars < lines.length ? leadingBlock(lines, afterVars) : lines.length;
    lines.splice(at, 0, "", "[vars.RESOURCES]", ...entries);
    resourcesHeader = at + 1;
  } else {
    // The table's keys are replaced; its comments and blank lines stay where they are.
    const end = sectionEnd(lines, resourcesHeader);
    const keys: [number, number][] = [];
    for (let i = resourcesHeader + 1; i < end; i++) {
      if (isComment(lines[i]) || isBlank(lines[i])) continue;
      const extent = valueExtent(lines, i);
      keys.push([i, extent]);
      i = extent - 1;
    }
    for (const [from, to] of keys.reverse()) lines.splice(from, to - from);
    lines.splice(resourcesHeader + 1, 0, ...entries);
  }

  if (vars.jobs !== undefined) {
    const crons = vars.crons ?? jobCrons(vars.jobs);
    const cronsLine = `crons = [${crons.map(tomlString).join(", ")}]`;
    const triggers = findHeader(lines, "triggers");
    if (triggers >= 0) {
      setKey(lines, triggers, "crons", [cronsLine], () => triggers + 1);
    } else {
      // Below a commented-out example of [triggers] if there is one, else after [vars.RESOURCES].
      const example = lines.findIndex((line) => /^\s*#\s*\[triggers\]\s*$/.test(line));
      let at: number;
      if (example >= 0) {
        at = example + 1;
        while (isComment(lines[at])) at++;
      } else {
        at = sectionEnd(lines, findHeader(lines, "vars.RESOURCES"));
        at = at < lines.length ? leadingBlock(lines, at) : lines.length;
      }
      lines.splice(at, 0, "[triggers]", cronsLine);
    }
  }
  return lines.join(newline);
}

/**
 * The reverse edit: the file as it was before any setup, its CKAN_BASE_URL, [vars.RESOURCES] keys,
 * SNAPSHOT_JOBS and [triggers] crons taken out, everything else (comments included) left as it is.
 * The specs run the production configuration this way, whatever an operator's checkout holds.
 */
export function withoutProductionVars(toml: string): string {
  const newline = toml.includes("\r\n") ? "\r\n" : "\n";
  const lines = toml.split(/\r?\n/);
  const removeKeys = (section: string, keys: (key: string) => boolean): void => {
    const header = findHeader(lines, section);
    if (header < 0) return;
    for (let i = header + 1; i < sectionEnd(lines, header); ) {
      const key = /^\s*([A-Za-z0-9_.-]+|"[^"]*")\s*=/.exec(lines[i] ?? "")?.[1];
      if (key !== undefined && !isComment(lines[i]) && keys(key)) lines.splice(i, valueExtent(lines, i) - i);
      else i = key === undefined ? i + 1 : valueExtent(lines, i);
    }
  };
  removeKeys("vars", (key) => key === "CKAN_BASE_URL" || key === "RESOURCES" || key === "SNAPSHOT_JOBS");
  removeKeys("vars.RESOURCES", () => true);
  removeKeys("triggers", (key) => key === "crons");
  // A [triggers] setup added, left with no key, goes too: wrangler reads an empty table as one.
  const triggers = findHeader(lines, "triggers");
  if (
    triggers >= 0 &&
    lines.slice(triggers + 1, sectionEnd(lines, triggers)).every((line) => isBlank(line) || isComment(line))
  )
    lines.splice(triggers, 1);
  return lines.join(newline);
}
