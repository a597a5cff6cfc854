// datapackage.json, read by an independent reader: Ajv with the Frictionless Data v1 profiles as
// published (test/fixtures/frictionless-v1), for a job of every format, header and delimiter.
import { readFileSync } from "node:fs";
import Ajv from "ajv-draft-04";
import { describe, expect, it } from "vitest";
import { configFor } from "../../src/config/config.ts";
import type { Env } from "../../src/config/env.ts";
import type { Column } from "../../src/rows/types.ts";
import { resourceOf, tableSchemaType, withResource, type DataPackage } from "../../src/snapshot/datapackage.ts";
import { parseSnapshotJobs } from "../../src/snapshot/jobs.ts";
import type { SnapshotEntry } from "../../src/snapshot/manifest.ts";

const profile = (name: string): object =>
  JSON.parse(
    readFileSync(new URL(`../fixtures/frictionless-v1/${name}.json`, import.meta.url).pathname, "utf8"),
  ) as object;
const ajv = new Ajv({ allErrors: true, strict: false });
const validPackage = ajv.compile(profile("tabular-data-package"));
const validSchema = ajv.compile(profile("table-schema"));

const config = configFor({
  CKAN_BASE_URL: "https://ckan.example.org",
  RESOURCES: JSON.stringify({ grants: "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2" }),
} as Env);

/** The sample table as CKAN describes it, with its data dictionary (one column undescribed). */
const COLUMNS: Column[] = [
  { id: "id", type: "int4", label: "Grant number", description: "The grant's number in the register." },
  { id: "amount", type: "numeric", label: "Amount (CAD)", description: "Paid, taxes included." },
  { id: "ratio", type: "float8", label: "Share of budget" },
  { id: "category", type: "text", label: "Program" },
  { id: "formula", type: "text" },
  { id: "created", type: "timestamp", label: "Approved at" },
  { id: "active", type: "bool", label: "Active" },
  { id: "tags", type: "_text" },
  { id: "extra", type: "json" },
];

function packageOf(job: Record<string, unknown>): DataPackage {
  const { jobs, problems } = parseSnapshotJobs(JSON.stringify([job]), config);
  expect(problems).toEqual([]);
  const parsed = jobs[0]!;
  let descriptor: DataPackage | undefined;
  for (const format of parsed.formats) {
    const entry: SnapshotEntry = {
      key: `${parsed.name}/20261120T030000Z.${format}`,
      format,
      stamp: "20261120T030000Z",
      rows: 10,
      bytes: 1234,
      sha256: "ab".repeat(32),
      started: "2026-11-20T03:00:00.000Z",
      finished: "2026-11-20T03:00:05.000Z",
      query: parsed.description,
      total: 10,
      ...(parsed.compress === "gzip" && format !== "parquet" && format !== "xlsx"
        ? { encoding: "gzip" as const, decoded_bytes: 5678 }
        : {}),
    };
    descriptor = withResource(parsed, descriptor, resourceOf(parsed, entry, COLUMNS), "2026-11-20T03:00:06.000Z");
  }
  return descriptor!;
}

function expectValid(descriptor: DataPackage): void {
  const json = JSON.parse(JSON.stringify(descriptor)) as DataPackage;
  expect(validPackage(json), JSON.stringify(validPackage.errors)).toBe(true);
  for (const resource of json.resources)
    expect(validSchema(resource.schema), `${resource.name}: ${JSON.stringify(validSchema.errors)}`).toBe(true);
}

describe("datapackage.json beside a job's manifest", () => {
  it("is a valid Tabular Data Package with one resource per format: the dated file, its size, hash and schema", () => {
    const descriptor = packageOf({
      name: "grants",
      resource: "grants",
      formats: ["csv", "tsv", "json", "ndjson", "xlsx", "parquet"],
    });
    expectValid(descriptor);
    expect(descriptor).toMatchObject({ profile: "tabular-data-package", name: "grants" });
    expect(descriptor.resources.map((r) => [r.name, r.path, r.format, r.mediatype])).toEqual([
      ["grants-csv", "20261120T030000Z.csv", "csv", "text/csv"],
      ["grants-tsv", "20261120T030000Z.tsv", "tsv", "text/tab-separated-values"],
      ["grants-json", "20261120T030000Z.json", "json", "application/json"],
      ["grants-ndjson", "20261120T030000Z.ndjson", "ndjson", "application/x-ndjson"],
      [
        "grants-xlsx",
        "20261120T030000Z.xlsx",
        "xlsx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
      ],
      ["grants-parquet", "20261120T030000Z.parquet", "parquet", "application/vnd.apache.parquet"],
    ]);
    const csv = descriptor.resources[0]!;
    expect(csv).toMatchObject({ encoding: "utf-8", bytes: 1234, hash: `sha256:${"ab".repeat(32)}` });
    expect(csv.dialect).toEqual({
      delimiter: ",",
      lineTerminator: "\r\n",
      quoteChar: '"',
      doubleQuote: true,
      skipInitialSpace: false,
      header: true,
      caseSensitiveHeader: true,
    });
    expect(descriptor.resources[1]!.dialect).toMatchObject({ delimiter: "\t" });
    expect(csv.schema.fields.slice(0, 2)).toEqual([
      { name: "id", title: "Grant number", description: "The grant's number in the register.", type: "integer" },
      { name: "amount", title: "Amount (CAD)", description: "Paid, taxes included.", type: "number" },
    ]);
    expect(csv.schema.fields.map((f) => [f.name, f.type])).toEqual([
      ["id", "integer"],
      ["amount", "number"],
      ["ratio", "number"],
      ["category", "string"],
      ["formula", "string"],
      ["created", "datetime"],
      ["active", "boolean"],
      ["tags", "array"],
      ["extra", "any"],
    ]);
    // A null is an empty cell in CSV, TSV and XLSX; JSON's, NDJSON's and Parquet's own null needs no marker.
    expect(Object.fromEntries(descriptor.resources.map((r) => [r.format, r.schema.missingValues ?? "none"]))).toEqual({
      csv: [""],
      tsv: [""],
      json: "none",
      ndjson: "none",
      xlsx: [""],
      parquet: "none",
    });
  });

  it("describes a gzipped file as a reader gets it over HTTP: decoded, its decoded size", () => {
    const descriptor = packageOf({ name: "zipped", resource: "grants", formats: ["csv", "parquet"], compress: "gzip" });
    expectValid(descriptor);
    expect(descriptor.resources[0]).toMatchObject({ bytes: 5678 });
    expect(descriptor.resources[0]!.hash).toBeUndefined();
    expect(descriptor.resources[1]).toMatchObject({ bytes: 1234, hash: `sha256:${"ab".repeat(32)}` });
  });

  it("maps CKAN's column types to Table Schema's", () => {
    const mapped = Object.fromEntries(
      [
        "int",
        "int8",
        "bigint",
        "numeric",
        "float8",
        "double precision",
        "bool",
        "date",
        "time",
        "timestamptz",
        "uuid",
        "varchar",
        "_int4",
        "text[]",
        "json",
        "interval",
      ].map((t) => [t, tableSchemaType(t)]),
    );
    expect(mapped).toEqual({
      int: { type: "integer" },
      int8: { type: "integer" },
      bigint: { type: "integer" },
      numeric: { type: "number" },
      float8: { type: "number" },
      "double precision": { type: "number" },
      bool: { type: "boolean" },
      date: { type: "date" },
      time: { type: "time" },
      timestamptz: { type: "datetime" },
      uuid: { type: "string", format: "uuid" },
      varchar: { type: "string" },
      _int4: { type: "array" },
      "text[]": { type: "array" },
      json: { type: "any" },
      interval: { type: "any" },
    });
  });
});
