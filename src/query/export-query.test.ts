import { describe, expect, it } from "vitest";
import { parseConfig } from "../config/config.ts";
import { BadParameter, HttpError } from "../errors.ts";
import type { FormatName } from "./formats.ts";
import { parseExportQuery } from "./export-query.ts";

const config = parseConfig({
  CKAN_BASE_URL: "https://portal.example/data/en",
  RESOURCES: { sample: "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2" },
  MAX_ROWS: "1000",
});
const parse = (qs: string, format: FormatName = "csv") => parseExportQuery(new URLSearchParams(qs), format, config);

function rejects(qs: string, parameter: string, status = 400, format: FormatName = "csv"): string {
  try {
    parse(qs, format);
  } catch (error) {
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).status).toBe(status);
    expect((error as HttpError).parameter).toBe(parameter);
    return (error as HttpError).message;
  }
  throw new Error(`expected ${qs} to be rejected`);
}

describe("export query", () => {
  it("resolves an alias and fills defaults", () => {
    expect(parse("resource=sample")).toMatchObject({
      resourceId: "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2",
      alias: "sample",
      filters: {},
      limit: undefined,
      offset: 0,
      filename: "sample.csv",
      format: "csv",
      options: { bom: false, header: "id", delimiter: ",", formulaGuard: true, decimal: "." },
      errors: undefined,
      rowLimit: { rows: 1000, format: "csv", formatOwn: false },
    });
  });

  it("needs exactly one of resource and resource_id", () => {
    rejects("", "resource_id");
    rejects("resource=sample&resource_id=5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2", "resource");
    rejects("resource=nope", "resource", 404);
    expect(rejects("resource_id=not-a-uuid", "resource_id")).toContain("UUID");
  });

  it("merges filters JSON with filter.<field>, lists included", () => {
    const q = parse(
      'resource=sample&filters={"category":["alpha","beta"],"id":3}&filter.active=true&filter.name=a&filter.name=b',
    );
    expect(q.filters).toEqual({ category: ["alpha", "beta"], id: 3, active: "true", name: ["a", "b"] });
  });

  it("keeps filter numbers a double would round as their exact text", () => {
    const q = parse(
      'resource=sample&filters={"amount":12345678901234567890.123456789,"id":[9007199254740993,3],"ratio":{"gte":-0.5}}',
    );
    expect(q.filters).toEqual({
      amount: "12345678901234567890.123456789",
      id: ["9007199254740993", 3],
      ratio: { gte: -0.5 },
    });
  });

  it("reads range filters (CKAN 2.12) from filters JSON and from filter.<field>[gt|gte|lt|lte]", () => {
    expect(parse('resource=sample&filters={"amount":{"gte":10,"lt":20.5}}').filters).toEqual({
      amount: { gte: 10, lt: 20.5 },
    });
    expect(
      parse("resource=sample&filter.created[gte]=2020-01-01&filter.created[lt]=2021-01-01&filter.a.b=x").filters,
    ).toEqual({
      created: { gte: "2020-01-01", lt: "2021-01-01" },
      "a.b": "x",
    });
  });

  it("rejects bad filters", () => {
    rejects('resource=sample&filters={"id":null}', "filters");
    rejects('resource=sample&filters={"id":{"between":1}}', "filters");
    rejects('resource=sample&filters={"id":{}}', "filters");
    rejects('resource=sample&filters={"id":{"gt":[1]}}', "filters");
    rejects("resource=sample&filter.id=1&filter.id[gt]=0", "filter.id[gt]");
    rejects("resource=sample&filter.id[gt]=0&filter.id[gt]=1", "filter.id[gt]");
    rejects('resource=sample&filters={"id":[]}', "filters");
    rejects('resource=sample&filters={"id":[[1]]}', "filters");
    rejects("resource=sample&filters=[1]", "filters");
    rejects("resource=sample&filters={oops", "filters");
    expect(rejects('resource=sample&filters={"id":1}&filter.id=2', "filter.id")).toContain("both");
  });

  it("checks limit and offset", () => {
    expect(parse("resource=sample&limit=0&offset=20")).toMatchObject({ limit: 0, offset: 20 });
    rejects("resource=sample&limit=-1", "limit");
    rejects("resource=sample&limit=1.5", "limit");
    rejects("resource=sample&offset=abc", "offset");
    expect(rejects("resource=sample&limit=1001", "limit")).toContain("1000");
    // Twenty digits are still a whole number: what is wrong is its size, and the message names the maximum.
    expect(rejects("resource=sample&limit=99999999999999999999", "limit")).toBe(
      "limit=99999999999999999999 is above this worker's maximum of 1000 rows per export. Use a smaller limit, add filters, or export in parts with offset.",
    );
    expect(rejects("resource=sample&offset=99999999999999999999", "offset")).toContain("9007199254740991");
  });

  it("names the bound, not a column, when a range filter's bracket holds something else", () => {
    expect(rejects("resource=sample&filter.amount[foo]=1", "filter.amount[foo]")).toBe(
      "Parameter filter.amount[foo] has the bound [foo]; a range filter's bound is one of [gt], [gte], [lt], [lte], e.g. filter.amount[gte]=10.",
    );
    expect(parse("resource=sample&filter.amount[gte]=1").filters).toEqual({ amount: { gte: "1" } });
  });

  it("parses fields and sort", () => {
    expect(parse("resource=sample&fields=id, name&sort=amount desc, id").fields).toEqual(["id", "name"]);
    rejects("resource=sample&fields=id,,name", "fields");
    rejects("resource=sample&fields=id,id", "fields");
    rejects("resource=sample&sort=amount sideways", "sort");
  });

  it("rejects unknown, repeated and other-format parameters, ignores _-prefixed ones", () => {
    expect(rejects("resource=sample&colour=red", "colour")).toContain("colour");
    rejects("resource=sample&limit=1&limit=2", "limit");
    expect(rejects("resource=sample&bom=1", "bom", 400, "json")).toContain("csv");
    rejects("resource=sample&delimiter=;", "delimiter", 400, "tsv");
    rejects("resource=sample&delimiter=x", "delimiter");
    expect(parse("resource=sample&_=12345&_cachebust=1").alias).toBe("sample");
  });

  it("reads CSV switches and a download name", () => {
    const q = parse('resource=sample&bom=1&header=0&delimiter=;&formula_guard=0&filename=../My report"x');
    expect(q.options).toEqual({ bom: true, header: "none", delimiter: ";", formulaGuard: false, decimal: "." });
    expect(q.filename).toBe(".._My report_x.csv");
    rejects("resource=sample&bom=yes", "bom");
  });

  it("takes a decimal comma beside a semicolon, a pipe or a tab, never beside the comma delimiter", () => {
    expect(parse("resource=sample&delimiter=;&decimal=,")).toMatchObject({ options: { decimal: ",", delimiter: ";" } });
    expect(parse("resource=sample&decimal=,", "tsv")).toMatchObject({ options: { decimal: ",", delimiter: "\t" } });
    expect(rejects("resource=sample&decimal=,", "decimal")).toMatch(/decimal=, needs another delimiter.*delimiter=%3B/);
    rejects("resource=sample&delimiter=;&decimal=;", "decimal");
    rejects("resource=sample&decimal=,", "decimal", 400, "json");
  });
});

describe("each format's own options", () => {
  it("gives XLSX and Parquet their column names, Parquet its numeric mode, JSON none, and every format its errors mode", () => {
    expect(parse("resource=sample&header=label", "xlsx")).toMatchObject({
      format: "xlsx",
      options: { header: "label" },
      errors: undefined,
    });
    expect(parse("resource=sample&numeric=double", "parquet").options).toEqual({ header: "id", numeric: "double" });
    expect(parse("resource=sample", "json").options).toEqual({});
    expect(parse("resource=sample&errors=inline", "xlsx").errors).toBe("inline");
    rejects("resource=sample&errors=inline", "errors", 400, "json");
    expect(rejects("resource=sample&header=0", "header", 400, "xlsx")).toMatch(/always has its header row/);
  });
});

describe("helpful refusals", () => {
  it("refuses an empty resource as a bad parameter, not an unknown name", () => {
    expect(rejects("resource=", "resource")).toMatch(/^Parameter resource is empty/);
  });

  it("suggests the parameter a typo was meant for, and links its docs", () => {
    const error = (() => {
      try {
        parse("resource=sample&limt=10");
      } catch (caught) {
        return caught as BadParameter;
      }
    })();
    expect(error).toBeInstanceOf(BadParameter);
    expect(error?.parameter).toBe("limt");
    expect(error?.message).toMatch(/^Unknown parameter limt\. Did you mean limit\? Known parameters: resource, /);
    expect(error?.documented).toBe("limit");
    expect(rejects("resource=sample&feilds=id", "feilds")).toContain("Did you mean fields?");
    // Nothing within reach: no guess.
    expect(rejects("resource=sample&colour=red", "colour")).not.toContain("Did you mean");
    expect(rejects("resource=sample&x=1", "x")).not.toContain("Did you mean");
  });

  it("says a range filter's bound lost its closing bracket", () => {
    // `filter.amount[gt=1`: the URL's `=` ends the name before the missing `]`.
    expect(rejects("resource=sample&filter.amount[gt=1", "filter.amount[gt")).toBe(
      "Parameter filter.amount[gt has no closing bracket: a range filter's bound is written filter.amount[gt]=<value>.",
    );
  });

  it("lists the published names for an unknown alias, unless links are signed", () => {
    expect(rejects("resource=sampel", "resource", 404)).toContain("Published: sample");
    const signed = parseConfig({
      CKAN_BASE_URL: "https://portal.example/data/en",
      RESOURCES: { sample: "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2" },
      LINK_SIGNING_KEY: "k".repeat(32),
    });
    expect(() => parseExportQuery(new URLSearchParams("resource=sampel"), "csv", signed)).toThrow(
      /^No resource is published under the name "sampel"\.$/,
    );
  });
});
