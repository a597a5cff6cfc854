import { headerText } from "../format/csv.ts";
import { FORMATS, type FormatName } from "../query/formats.ts";
import type { Column } from "../rows/types.ts";
import type { SnapshotJob } from "./jobs.ts";
import { datapackageKey } from "./keys.ts";
import type { SnapshotEntry } from "./manifest.ts";

// datapackage.json beside a job's manifest: a Frictionless Tabular Data Package (v1, the version
// CKAN's datapackager, the datapackage libraries and frictionless all read; v2 readers read v1 too),
// one resource per format, each the format's latest file with the Table Schema of CKAN's fields and
// data dictionary. It changes when `latest` does (a format's publish step).

/** CKAN's (PostgreSQL's) column types as Table Schema's; what is not listed is `any`. */
export function tableSchemaType(ckanType: string): { type: string; format?: string } {
  const type = ckanType.toLowerCase().trim();
  if (type.startsWith("_") || type.endsWith("[]")) return { type: "array" };
  if (/^(int|int2|int4|int8|integer|smallint|bigint|serial|bigserial)$/.test(type)) return { type: "integer" };
  if (/^(numeric|decimal|float|float4|float8|real|double precision|money)(\(.*\))?$/.test(type))
    return { type: "number" };
  if (type === "bool" || type === "boolean") return { type: "boolean" };
  if (type === "date") return { type: "date" };
  if (/^(time|timetz|time (with|without) time zone)$/.test(type)) return { type: "time" };
  if (/^(timestamp|timestamptz|timestamp (with|without) time zone)$/.test(type)) return { type: "datetime" };
  if (type === "uuid") return { type: "string", format: "uuid" };
  if (/^(text|varchar|char|bpchar|name|citext|character varying|character)(\(.*\))?$/.test(type))
    return { type: "string" };
  return { type: "any" };
}

export interface Resource {
  profile: "tabular-data-resource";
  name: string;
  path: string;
  format: string;
  mediatype: string;
  encoding: "utf-8";
  bytes: number;
  hash?: string;
  compression?: "gz";
  dialect?: Record<string, unknown>;
  schema: { fields: Record<string, unknown>[]; missingValues?: string[] };
}

export interface DataPackage {
  profile: "tabular-data-package";
  name: string;
  title: string;
  created: string;
  resources: Resource[];
}

/**
 * How a format writes a null, so what a reader takes as missing: an empty cell in CSV, TSV and XLSX
 * (an empty string is `""` in CSV and TSV, which a CSV reader cannot tell apart once parsed); JSON's,
 * NDJSON's and Parquet's own null, which every reader takes as missing without a marker (v1 cannot
 * say "no string is missing": its default, `[""]`, applies there).
 */
const MISSING: Record<FormatName, string[] | undefined> = {
  csv: [""],
  tsv: [""],
  xlsx: [""],
  json: undefined,
  ndjson: undefined,
  parquet: undefined,
};

/** One format's latest file as a Tabular Data Resource: its path beside datapackage.json, size, hash, dialect and schema. */
export function resourceOf(job: SnapshotJob, entry: SnapshotEntry, columns: Column[]): Resource {
  const format = entry.format;
  const output = job.queries[format];
  const csv = output?.format === "csv" || output?.format === "tsv" ? output.options : undefined;
  const named = output?.format === "xlsx" || output?.format === "parquet" ? output.options.header : undefined;
  // The names a reader finds in the file: CSV's header row and XLSX's and Parquet's column names follow `header`.
  const header = csv?.header ?? named ?? "id";
  const names = headerText(columns, header === "none" ? "id" : header);
  const decimalComma = csv?.decimal === ",";
  const fields = columns.map((column, i) => ({
    name: names[i],
    ...(column.label === undefined ? {} : { title: column.label }),
    ...(column.description === undefined ? {} : { description: column.description }),
    ...tableSchemaType(column.type),
    ...(decimalComma && tableSchemaType(column.type).type === "number" ? { decimalChar: "," } : {}),
  }));
  const resource: Resource = {
    profile: "tabular-data-resource",
    name: `${job.name}-${format}`,
    path: entry.key.slice(entry.key.indexOf("/") + 1),
    format: FORMATS[format].extension,
    mediatype: FORMATS[format].contentType.split(";")[0]!.trim(),
    encoding: "utf-8",
    // A gzipped file is sent with Content-Encoding: gzip (by the worker and by R2), which a reader's
    // HTTP client undoes: the bytes it reads are the export's, whose hash is not kept.
    ...(entry.encoding === "gzip"
      ? { bytes: entry.decoded_bytes ?? entry.bytes }
      : { bytes: entry.bytes, hash: `sha256:${entry.sha256}` }),
    schema: { fields, ...(MISSING[format] === undefined ? {} : { missingValues: MISSING[format] }) },
  };
  if (csv !== undefined) {
    resource.dialect = {
      delimiter: format === "tsv" ? "\t" : csv.delimiter,
      lineTerminator: "\r\n",
      quoteChar: '"',
      doubleQuote: true,
      skipInitialSpace: false,
      header: csv.header !== "none",
      caseSensitiveHeader: true,
    };
  }
  return resource;
}

/** The job's package with `resource` in place of its format's earlier one (formats in the job's order). */
export function withResource(
  job: SnapshotJob,
  previous: DataPackage | undefined,
  resource: Resource,
  created: string,
): DataPackage {
  const others = (previous?.resources ?? []).filter((r) => r.name !== resource.name);
  const order = (r: Resource): number => job.formats.findIndex((f) => r.name === `${job.name}-${f}`);
  const resources = [...others, resource].filter((r) => order(r) >= 0).sort((a, b) => order(a) - order(b));
  return { profile: "tabular-data-package", name: job.name, title: `Snapshots of ${job.name}`, created, resources };
}

/** datapackage.json after a format's file became `latest`: only the run holding the job writes it. */
export async function writeDatapackage(
  bucket: R2Bucket,
  job: SnapshotJob,
  entry: SnapshotEntry,
  columns: Column[],
): Promise<void> {
  const stored = await bucket.get(datapackageKey(job.name));
  const previous = stored === null ? undefined : ((await stored.json()) as DataPackage);
  const descriptor = withResource(job, previous, resourceOf(job, entry, columns), new Date().toISOString());
  await bucket.put(datapackageKey(job.name), JSON.stringify(descriptor, null, 2), {
    httpMetadata: { contentType: "application/json; charset=utf-8", cacheControl: "no-cache" },
  });
}
