import type { Version } from "./cells.ts";
import { EmulatorError, JSON_CONTENT_TYPE, SITE_URL } from "./error-answers.ts";
import { hash } from "./hash.ts";
import { pageLinks } from "./links.ts";
import { pyDumps, RawJson } from "./py-json.ts";
import { EMULATOR_RESOURCES, findResource, RESOURCE_LIST, type Resource } from "./resources.ts";

// The site around the DataStore, as far as a client finding its way needs it: `status_show`
// (version and plugins), `resource_show`, `package_show` and `package_search` over two datasets,
// and `datastore_search` on `_table_metadata` (the DataStore's tables). Shapes, key order and
// error texts are those of the recorded answers of real CKAN 2.10, 2.11 and 2.12
// (test/emulator-site.test.ts); ids, dates and names are the emulator's own.

/** What status_show reports as ckan_version, per mode: the releases the recordings come from. */
const RELEASE: Record<Version, string> = { "2.10": "2.10.10", "2.11": "2.11.5", "2.12": "2.12.0b0" };

/** The body of a successful action: {help, success, result}, written as CKAN writes it. */
export function actionResult(action: string, result: unknown): Response {
  return new Response(pyDumps({ help: helpUrl(action), success: true, result }), {
    status: 200,
    headers: { "content-type": JSON_CONTENT_TYPE },
  });
}

export function helpUrl(action: string): string {
  return `${SITE_URL}/api/3/action/help_show?name=${action}`;
}

function actionError(action: string, status: number, error: Record<string, unknown>): EmulatorError {
  return new EmulatorError(status, { help: helpUrl(action), error, success: false }, JSON.stringify(error));
}

/** CKAN's NotFound raised without a message (resource_show, package_show of an unknown id). */
function notFound(action: string): EmulatorError {
  return actionError(action, 404, { __type: "Not Found Error", message: "Not found" });
}

/** CKAN's _get_or_bust: a required parameter that is missing or empty. */
function requiredId(action: string, url: URL): string {
  const id = url.searchParams.get("id") ?? "";
  if (id === "") throw actionError(action, 409, { id: ["Missing value"], __type: "Validation Error" });
  return id;
}

/** The anonymous caller (an empty user name, hence two spaces) refused something private. */
function denied(action: string, what: string): EmulatorError {
  return actionError(action, 403, {
    __type: "Authorization Error",
    message: `Access denied: User  not authorized to read ${what}`,
  });
}

/** An action the site does not have (the DataStore's, without the datastore plugin). */
export function unknownAction(action: string): EmulatorError {
  const message = `Bad request - Action name not known: ${action}`;
  return new EmulatorError(400, message, message);
}

export function statusShow(version: Version, datastore: boolean): Response {
  return actionResult("status_show", {
    site_title: "CKAN",
    site_description: "",
    site_url: SITE_URL,
    error_emails_to: "",
    locale_default: "en",
    extensions: datastore ? ["activity", "datastore"] : ["activity"],
    ckan_version: RELEASE[version],
  });
}

interface Dataset {
  readonly id: string;
  readonly name: string;
  readonly title: string;
  readonly notes: string;
  readonly private: boolean;
  readonly resources: readonly Resource[];
}

const byId = (id: string): Resource => {
  const resource = findResource(id);
  if (resource === undefined) throw new RangeError(`no emulated resource ${id}`);
  return resource;
};

// CKAN keeps privacy on the dataset: the private resource lives in a private dataset.
const DATASETS: readonly Dataset[] = [
  {
    id: "d0d0d0d0-0000-4000-8000-00000000000a",
    name: "demo-grants",
    title: "Demo grants",
    notes: "Generated grant tables of every size, and the table of every edge case real CKAN was recorded with.",
    private: false,
    resources: [byId(EMULATOR_RESOURCES.sample), byId(EMULATOR_RESOURCES.big), byId(EMULATOR_RESOURCES.edge)],
  },
  {
    id: "d0d0d0d0-0000-4000-8000-00000000000b",
    name: "demo-private-grants",
    title: "Private grants",
    notes: "Readable with the API token only.",
    private: true,
    resources: [byId(EMULATOR_RESOURCES.private)],
  },
];

const CREATED = "2026-01-05T09:30:00.000000";

function datasetOf(resource: Resource): Dataset | undefined {
  return DATASETS.find((dataset) => dataset.resources.includes(resource));
}

/** A resource as resource_show and package_show write it: CKAN's keys, in CKAN's (sorted) order. */
function resourceDict(resource: Resource, dataset: Dataset, datastore: boolean): Record<string, unknown> {
  return {
    cache_last_updated: null,
    cache_url: null,
    created: CREATED,
    datastore_active: datastore,
    description: resource.description,
    format: "CSV",
    hash: "",
    id: resource.id,
    last_modified: null,
    metadata_modified: CREATED,
    mimetype: null,
    mimetype_inner: null,
    name: resource.name,
    package_id: dataset.id,
    position: dataset.resources.indexOf(resource),
    resource_type: null,
    size: null,
    state: "active",
    url: `${SITE_URL}/datastore/dump/${resource.id}`,
    url_type: "datastore",
  };
}

function packageDict(dataset: Dataset, datastore: boolean): Record<string, unknown> {
  return {
    author: null,
    id: dataset.id,
    metadata_created: CREATED,
    metadata_modified: CREATED,
    name: dataset.name,
    notes: dataset.notes,
    num_resources: dataset.resources.length,
    private: dataset.private,
    resources: dataset.resources.map((resource) => resourceDict(resource, dataset, datastore)),
    state: "active",
    title: dataset.title,
    type: "dataset",
  };
}

export function resourceShow(url: URL, authorized: boolean, datastore: boolean): Response {
  const id = requiredId("resource_show", url);
  const resource = findResource(id);
  // An alias is the DataStore's name for a table, not a resource id: resource_show does not know it.
  const dataset = resource !== undefined && resource.id === id ? datasetOf(resource) : undefined;
  if (resource === undefined || dataset === undefined) throw notFound("resource_show");
  if (dataset.private && !authorized) throw denied("resource_show", `resource ${resource.id}`);
  return actionResult("resource_show", resourceDict(resource, dataset, datastore));
}

export function packageShow(url: URL, authorized: boolean, datastore: boolean): Response {
  const id = requiredId("package_show", url);
  const dataset = DATASETS.find((d) => d.id === id || d.name === id);
  if (dataset === undefined) throw notFound("package_show");
  if (dataset.private && !authorized) throw denied("package_show", `package ${id}`);
  return actionResult("package_show", packageDict(dataset, datastore));
}

/**
 * package_search: every word of `q` must occur in a dataset's name, title, notes or a resource's
 * name (Solr's default AND over the text field, without its stemming); private datasets only with
 * the token and include_private=true. `rows` (default 10) and `start` page the results.
 */
export function packageSearch(url: URL, authorized: boolean, datastore: boolean): Response {
  const words = (url.searchParams.get("q") ?? "")
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== "");
  const includePrivate = authorized && url.searchParams.get("include_private") === "true";
  const text = (dataset: Dataset): string =>
    [dataset.name, dataset.title, dataset.notes, ...dataset.resources.map((resource) => resource.name)]
      .join(" ")
      .toLowerCase();
  const found = DATASETS.filter(
    (dataset) => (includePrivate || !dataset.private) && words.every((word) => text(dataset).includes(word)),
  );
  const rows = Math.max(0, Number(url.searchParams.get("rows") ?? 10) || 0);
  const start = Math.max(0, Number(url.searchParams.get("start") ?? 0) || 0);
  return actionResult("package_search", {
    count: found.length,
    facets: {},
    results: found.slice(start, start + rows).map((dataset) => packageDict(dataset, datastore)),
    sort: "score desc, metadata_modified desc",
    search_facets: {},
  });
}

export const TABLE_METADATA = "_table_metadata";

/**
 * datastore_search on `_table_metadata`, the DataStore's view of its tables: one row per table
 * (`alias_of` null) and one per alias (`alias_of` the table), `_id` a hex text and `oid` a text
 * although the fields call them int and oid, as recorded. Only limit and offset are honoured.
 */
export function tableMetadata(
  params: Record<string, unknown>,
  version: Version,
  linkPath: string,
  linkQuery: URLSearchParams,
): Response {
  const tables = RESOURCE_LIST.flatMap((resource, n) => [
    { name: resource.id, oid: String(17752 + 17 * n), alias_of: null as string | null },
    ...resource.aliases.map((alias, a) => ({
      name: alias,
      oid: String(17900 + 17 * n + a),
      alias_of: resource.id as string | null,
    })),
  ]);
  const rows = tables.map((table) => ({ _id: hex16(table.name), ...table })).sort((a, b) => (a._id < b._id ? -1 : 1));
  const limit = typeof params["limit"] === "number" ? params["limit"] : Number(params["limit"] ?? 100);
  const offset = typeof params["offset"] === "number" ? params["offset"] : Number(params["offset"] ?? 0);
  const page = rows.slice(offset, offset + limit);
  const records = `[${page.map((row) => `{"_id":${JSON.stringify(row._id)},"name":${JSON.stringify(row.name)},"oid":${JSON.stringify(row.oid)},"alias_of":${JSON.stringify(row.alias_of)}}`).join(",")}]`;
  const result: Record<string, unknown> = {};
  if (version === "2.12") result["include_next_page"] = false;
  Object.assign(result, {
    include_total: true,
    limit,
    ...("offset" in params ? { offset } : {}),
    records_format: "objects",
    resource_id: TABLE_METADATA,
  });
  if (version !== "2.12") result["total_estimation_threshold"] = null;
  result["records"] = new RawJson(page.length === 0 ? "[]" : records);
  result["fields"] = [
    { id: "_id", type: "int" },
    { id: "name", type: "name" },
    { id: "oid", type: "oid" },
    { id: "alias_of", type: "name" },
  ];
  if (version !== "2.12") result["_links"] = pageLinks(linkPath, linkQuery, limit, offset);
  result["total"] = rows.length;
  if (version !== "2.12") result["total_was_estimated"] = false;
  return actionResult("datastore_search", result);
}

/** A stable 16-digit hex text from a name, like the recorded `_id`s. */
function hex16(name: string): string {
  let h1 = 0;
  let h2 = 0;
  for (let i = 0; i < name.length; i++) {
    h1 = hash(h1 ^ name.charCodeAt(i), 1);
    h2 = hash(h2 ^ name.charCodeAt(i), 2);
  }
  return (h1 >>> 0).toString(16).padStart(8, "0") + (h2 >>> 0).toString(16).padStart(8, "0");
}
