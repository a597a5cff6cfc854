import { unknownAlias } from "../query/export-query.ts";
import type { CkanSite } from "../ckan/site.ts";
import type { UpstreamFetch } from "../ckan/types.ts";
import type { DiscoverySettings } from "../config/narrow.ts";
import { toHttpError } from "../errors.ts";
import { FORMATS } from "../query/formats.ts";
import { resourceText } from "./resource-show.ts";
import { probeDistinctValues, tableInfo, type ColumnInfo } from "./table-info.ts";

export interface DiscoveryDeps {
  settings: DiscoverySettings;
  /** The CKAN site, its client asking datastore_search (with the token, where one is set). */
  site: CkanSite;
  /** For the actions asked anonymously (resource_show). */
  upstreamFetch: UpstreamFetch;
  /** e.g. https://export.example.org */
  origin: string;
  /** A path as a link to hand out: absolute, and signed when the worker only honours signed links. */
  link: (path: string) => Promise<string>;
}

/** `/export.<format>?resource=<alias>&...`, commas left readable. */
export function exportPath(format: string, alias: string, params: [string, string][] = []): string {
  const encode = (text: string): string => encodeURIComponent(text).replaceAll("%2C", ",");
  const pairs: [string, string][] = [["resource", alias], ...params];
  const query = pairs.map(([name, value]) => `${encode(name)}=${encode(value)}`).join("&");
  return `/export.${format}?${query}`;
}

/** The published alias, or the 404 a link naming it would get. */
export function publishedResource(config: DiscoverySettings, alias: string): string {
  const id = config.resources.get(alias);
  if (id === undefined) throw unknownAlias(config, alias);
  return id;
}

async function inBatches<T, R>(items: T[], size: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(work))));
  return out;
}

/** GET /resources: every published alias with its name, description and row count where CKAN gives them. */
export async function listResources(deps: DiscoveryDeps): Promise<unknown> {
  const { settings: config, origin } = deps;
  const { client } = deps.site;
  const resources = await inBatches([...config.resources], config.upstreamConcurrency, async ([name, id]) => {
    const entry: Record<string, unknown> = { name, resource_id: id };
    const [text, info] = await Promise.all([
      resourceText(config.ckanBase, deps.upstreamFetch, id),
      client.search({ resource_id: id, limit: 0, include_total: true }).then(
        (result) => ({ rows: result.total, estimated: result.total_was_estimated === true }),
        (error: unknown) => ({ error: toHttpError(error) }),
      ),
    ]);
    Object.assign(entry, text);
    if ("error" in info) entry.error = { status: info.error.status, message: client.redact(info.error.message) };
    else {
      entry.rows = info.rows ?? null;
      if (info.estimated) entry.rows_estimated = true;
    }
    entry.links = {
      self: `${origin}/resources/${encodeURIComponent(name)}`,
      page: `${origin}/?resource=${encodeURIComponent(name)}`,
      csv: await deps.link(exportPath("csv", name, [["limit", "100"]])),
    };
    return entry;
  });
  return {
    resources,
    // Other resources by resource_id: allowed or not (their ids are never listed).
    unlisted_allowed: config.allowUnlisted,
    max_rows: config.maxRows,
    signing: config.linkSigningKey !== undefined,
    formats: Object.keys(FORMATS),
    openapi: `${origin}/openapi.json`,
    snapshots: `${origin}/snapshots`,
  };
}

async function examples(
  deps: DiscoveryDeps,
  alias: string,
  columns: ColumnInfo[],
): Promise<{ title: string; url: string }[]> {
  const list: [string, string, [string, string][]][] = [
    ["The first 10 rows as CSV", "csv", [["limit", "10"]]],
    ["The first 10 rows as JSON", "json", [["limit", "10"]]],
    ["The header row only", "csv", [["limit", "0"]]],
  ];
  const some = columns.slice(0, 3).map((c) => c.id);
  if (some.length > 1)
    list.push([
      `Columns ${some.join(", ")}, first 10 rows`,
      "csv",
      [
        ["fields", some.join(",")],
        ["limit", "10"],
      ],
    ]);
  const picked = columns.find((c) => c.values !== undefined && c.values.length > 0);
  if (picked?.values !== undefined) {
    const value = String(picked.values[0]);
    list.push([
      `Rows where ${picked.id} is ${value}, first 10`,
      "csv",
      [
        [`filter.${picked.id}`, value],
        ["limit", "10"],
      ],
    ]);
  }
  const paths = list.map(([title, format, params]): [string, string] => [title, exportPath(format, alias, params)]);
  paths.push(...aggregateExamples(alias, columns, picked));
  return Promise.all(paths.map(async ([title, path]) => ({ title, url: await deps.link(path) })));
}

/** Aggregates a dashboard would start from: rows per few-valued column, a numeric column per month, its totals. */
function aggregateExamples(alias: string, columns: ColumnInfo[], picked: ColumnInfo | undefined): [string, string][] {
  const path = (params: [string, string][]): string =>
    exportPath("csv", alias, params).replace("/export.", "/aggregate.");
  const out: [string, string][] = [];
  const group = picked ?? columns.find((c) => c.type === "text");
  const numeric = columns.find((c) => /^(numeric|int4|int8|float8|int|integer|bigint)$/.test(c.type) && c.id !== "id");
  const when = columns.find((c) => c.type === "date" || c.type.startsWith("timestamp"));
  if (group !== undefined) out.push([`Rows per ${group.id} (an aggregate)`, path([["group_by", group.id]])]);
  if (numeric !== undefined && when !== undefined) {
    out.push([
      `Rows and the sum of ${numeric.id} per month of ${when.id}`,
      path([
        ["group_by", `month(${when.id})`],
        ["measures", `count,sum(${numeric.id})`],
      ]),
    ]);
  }
  if (numeric !== undefined) {
    out.push([
      `Count, sum, average, min and max of ${numeric.id}`,
      path([["measures", `count,sum(${numeric.id}),avg(${numeric.id}),min(${numeric.id}),max(${numeric.id})`]]).replace(
        "/aggregate.csv",
        "/aggregate.json",
      ),
    ]);
  }
  return out;
}

/** GET /resources/<alias>: columns with the data dictionary, values of the few-valued ones, count, examples. */
export async function describeResource(alias: string, deps: DiscoveryDeps): Promise<unknown> {
  const { settings: config, origin, site } = deps;
  const id = publishedResource(config, alias);
  const [text, info] = await Promise.all([
    resourceText(config.ckanBase, deps.upstreamFetch, id),
    tableInfo(site.client, id),
  ]);
  const failedProbes = await probeDistinctValues(site.client, id, info.columns, config.upstreamConcurrency);
  return {
    name: alias,
    resource_id: id,
    ...text,
    rows: info.rows ?? null,
    ...(info.rowsEstimated ? { rows_estimated: true } : {}),
    max_rows: config.maxRows,
    // Range filters need CKAN 2.12: false once an export has found the site older, else null (not known).
    range_filters: site.rangeFilters === false ? false : null,
    formats: Object.keys(FORMATS),
    columns: info.columns,
    // Said, and kept by no cache: the values come back once CKAN answers again.
    ...(failedProbes > 0
      ? { values_incomplete: `CKAN failed ${failedProbes} of the probes for columns' values; some columns lack them.` }
      : {}),
    examples: await examples(deps, alias, info.columns),
    links: {
      self: `${origin}/resources/${encodeURIComponent(alias)}`,
      page: `${origin}/?resource=${encodeURIComponent(alias)}`,
      openapi: `${origin}/openapi.json`,
    },
  };
}
