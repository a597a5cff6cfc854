import { FORMATS, type FormatName, type NumericMode } from "./formats.ts";

/**
 * The one table of link parameters. The query parser takes its names, enums and bounds from here;
 * the README's parameter table (`npm run docs`), the OpenAPI description and the link-builder page
 * (through /openapi.json) are rendered from it. Adding a parameter here updates all of them.
 */
export interface Parameter {
  /** As written in a link; `<field>` marks a name the user completes. */
  name: string;
  /** One sentence or two, Markdown: what it does and what is refused. */
  meaning: string;
  /** A path and query using the `sample` alias. */
  example: string;
  schema: ParameterSchema;
  /** May be given more than once (values accumulate). */
  repeatable?: boolean;
  /** The name is a pattern (`filter.<field>`, `_anything`), not a literal parameter. */
  pattern?: boolean;
  /** Read by the signed-link check, not by the export query. */
  link?: boolean;
  /** Taken by one kind of link only: `/export.<format>` or `/aggregate.<format>`. */
  only?: "export" | "aggregate";
  /** What it means on an aggregate link, where that differs (sort, limit, offset). */
  aggregateMeaning?: string;
}

export interface ParameterSchema {
  type: "string" | "integer" | "boolean";
  enum?: readonly string[];
  minimum?: number;
  maxLength?: number;
  default?: string | number | boolean;
}

/** Bounds that keep one link from costing the upstream (or this worker) without limit. */
export const BOUNDS = {
  q: 1000,
  sort: 1000,
  filterFields: 50,
  filterValues: 1000,
  fields: 500,
  /** PostgreSQL's identifier limit, in UTF-8 bytes. */
  fieldName: 63,
} as const;

export const DELIMITERS = [",", ";", "|"] as const;
export const DECIMALS = [".", ","] as const;
export const ERROR_MODES = ["inline", "status"] as const;
export const NUMERIC_MODES = ["text", "double"] as const satisfies readonly NumericMode[];

const flag = (fallback: boolean): ParameterSchema => ({ type: "string", enum: ["1", "0", "true", "false"], default: fallback ? "1" : "0" });

export const PARAMETERS: readonly Parameter[] = [
  {
    name: "resource",
    meaning: "an alias from `RESOURCES` (unknown alias: 404, listing the published ones)",
    example: "/export.csv?resource=sample",
    schema: { type: "string" },
  },
  {
    name: "resource_id",
    meaning: "a CKAN resource UUID (malformed: 400). Give exactly one of `resource` / `resource_id`",
    example: "/export.csv?resource_id=5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2",
    schema: { type: "string" },
  },
  {
    name: "q",
    meaning: "free-text search, passed to CKAN's `q`",
    example: "/export.csv?resource=sample&q=glacier",
    schema: { type: "string", maxLength: BOUNDS.q },
  },
  {
    name: "filters",
    meaning:
      'CKAN\'s own form: a JSON object, field -> value, field -> list of values (any of them), or field -> range `{"gte": 10, "lt": 20}` (CKAN 2.12+)',
    example: '/export.csv?resource=sample&filters={"category":["alpha","beta"],"active":true}',
    schema: { type: "string" },
  },
  {
    name: "filter.<field>",
    meaning: "the URL-friendly form; repeat it for a list. May be combined with `filters`, but not on the same field",
    example: "/export.csv?resource=sample&filter.category=alpha&filter.category=beta",
    schema: { type: "string" },
    repeatable: true,
    pattern: true,
  },
  {
    name: "filter.<field>[gt|gte|lt|lte]",
    meaning:
      "a bound of a range (CKAN 2.12+): rows above/at least/below/at most the value, compared as the column's type. Combine bounds freely; not with an exact `filter.<field>` on the same field",
    example: "/export.csv?resource=sample&filter.amount[gte]=100&filter.created[lt]=2021-01-01",
    schema: { type: "string" },
    pattern: true,
  },
  {
    name: "limit",
    meaning: "most rows to return, 0 or more; absent means every matching row",
    example: "/export.csv?resource=sample&limit=100",
    schema: { type: "integer", minimum: 0 },
    aggregateMeaning: "most groups to return (top-N, after `sort`)",
  },
  {
    name: "offset",
    meaning: "rows to skip first",
    example: "/export.csv?resource=sample&limit=100&offset=200",
    schema: { type: "integer", minimum: 0, default: 0 },
    aggregateMeaning: "groups to skip first (after `sort`)",
  },
  {
    name: "fields",
    meaning: "comma-separated columns, in the order you want them",
    example: "/export.csv?resource=sample&fields=id,name,amount",
    schema: { type: "string" },
    only: "export",
  },
  {
    name: "group_by",
    meaning:
      "aggregates: comma-separated group columns and date buckets `year(f)`, `month(f)`, `day(f)`, `hour(f)` (date and timestamp columns; a bucket is its first instant). At most 8; absent: one row of totals. Not json columns",
    example: "/aggregate.csv?resource=sample&group_by=category,month(created)",
    schema: { type: "string" },
    only: "aggregate",
  },
  {
    name: "measures",
    meaning:
      "aggregates: comma-separated `count` (rows), `count(f)` (values), `sum(f)`, `avg(f)` (numeric columns), `min(f)`, `max(f)` (numbers, text, dates, timestamps); each output column is named as written. At most 16; default `count`",
    example: "/aggregate.csv?resource=sample&group_by=category&measures=count,sum(amount),avg(ratio)",
    schema: { type: "string", default: "count" },
    only: "aggregate",
  },
  {
    name: "sort",
    meaning: "CKAN's sort syntax; a descending sort puts nulls first (PostgreSQL's order), so filter them out to see the largest values",
    example: "/export.csv?resource=sample&sort=amount desc, name&filter.amount[gt]=0",
    schema: { type: "string", maxLength: BOUNDS.sort },
    aggregateMeaning: "output column names with `asc`/`desc` (`sort=sum(amount) desc`); default the group columns ascending. Nulls last ascending, first descending; text by code point",
  },
  {
    name: "filename",
    meaning: "download name (the extension is added when missing)",
    example: "/export.csv?resource=sample&filename=budget-2024",
    schema: { type: "string" },
  },
  {
    name: "bom",
    meaning: "CSV/TSV: `1` starts the file with a UTF-8 byte order mark, so Excel's double-click reads accents right",
    example: "/export.csv?resource=sample&bom=1",
    schema: flag(false),
  },
  {
    name: "header",
    meaning: "CSV/TSV/XLSX/Parquet: `label` heads (names) each column with its data dictionary label (its id where it has none); CSV/TSV: `0` leaves out the header row",
    example: "/export.csv?resource=sample&header=label",
    schema: { type: "string", enum: ["1", "0", "true", "false", "label"], default: "1" },
  },
  {
    name: "delimiter",
    meaning: "CSV: `,` (default), `;` (for semicolon locales, write it `%3B`) or `|`",
    example: "/export.csv?resource=sample&delimiter=%3B",
    schema: { type: "string", enum: DELIMITERS, default: "," },
  },
  {
    name: "decimal",
    meaning:
      "CSV/TSV: `,` writes the numbers of numeric columns with a decimal comma (`-0,50`), so a German, French or Dutch import reads them as numbers. Needs `delimiter=;` (or `|`, or TSV): with the comma delimiter it is a 400",
    example: "/export.csv?resource=sample&delimiter=%3B&decimal=,",
    schema: { type: "string", enum: DECIMALS, default: "." },
  },
  {
    name: "formula_guard",
    meaning: "CSV/TSV: `0` turns off the formula-injection guard (below) for this link",
    example: "/export.csv?resource=sample&formula_guard=0",
    schema: flag(true),
  },
  {
    name: "numeric",
    meaning:
      "Parquet: how columns of CKAN's `numeric` type are written. `text` (default) keeps every digit and trailing zero CKAN sent, as UTF-8 text (`CAST(amount AS DECIMAL(18,2))` in DuckDB, `pd.to_numeric` in pandas); `double` writes 64-bit floats, which readers sum at once but which keep only about 16 significant digits",
    example: "/export.parquet?resource=sample&numeric=double",
    schema: { type: "string", enum: NUMERIC_MODES, default: "text" },
  },
  {
    name: "errors",
    meaning:
      "CSV/TSV/XLSX: `inline` answers an error before the first byte as a one-cell table `#ERROR: <message>` with HTTP 200 (and `X-Export-Error: <status>`, never cached), which a spreadsheet shows; `status` gives the JSON error and its status. Default: inline for Google Sheets' and Power Query's fetchers, status for everyone else",
    example: "/export.csv?resource=sample&errors=inline",
    schema: { type: "string", enum: ERROR_MODES },
  },
  {
    name: "exp",
    meaning: "signed links: when the link stops working, in Unix seconds; covered by the signature (see Signed links)",
    example: "/export.csv?resource=sample&exp=1798000000&sig=...",
    schema: { type: "integer", minimum: 0 },
    link: true,
  },
  {
    name: "sig",
    meaning: "signed links: the HMAC signature of the path and every other parameter, required when the worker has `LINK_SIGNING_KEY`",
    example: "/export.csv?resource=sample&sig=...",
    schema: { type: "string" },
    link: true,
  },
  {
    name: "_anything",
    meaning: "ignored: a name starting with `_` is a cache buster",
    example: "/export.csv?resource=sample&_=1700000000",
    schema: { type: "string" },
    pattern: true,
  },
];

/** Parameters only some formats take: format/index.ts says which, this table says what they mean. */
const formatOnly = new Set<string>(Object.values(FORMATS).flatMap((f): readonly string[] => f.params));

/** The parameters a link to this format may carry, in table order (an export's, or an aggregate's). */
export function parametersFor(format: FormatName, kind: "export" | "aggregate" = "export"): Parameter[] {
  const own = new Set<string>(FORMATS[format].params);
  return PARAMETERS.filter((p) => (!formatOnly.has(p.name) || own.has(p.name)) && (p.only === undefined || p.only === kind));
}

const commonNames = (kind: "export" | "aggregate"): string[] =>
  PARAMETERS.filter((p) => !p.pattern && !p.link && !formatOnly.has(p.name) && (p.only === undefined || p.only === kind)).map((p) => p.name);

/** Literal names every format takes, apart from the signed-link ones. */
export const COMMON_NAMES: readonly string[] = commonNames("export");
/** The same for aggregate links. */
export const AGGREGATE_NAMES: readonly string[] = commonNames("aggregate");
export const LINK_NAMES: readonly string[] = PARAMETERS.filter((p) => p.link).map((p) => p.name);

/** The table entry a parameter name in an error belongs to (`filter.year` -> `filter.<field>`). */
export function parameterEntry(name: string): Parameter | undefined {
  const literal = PARAMETERS.find((p) => !p.pattern && p.name === name);
  if (literal !== undefined) return literal;
  if (name.startsWith("filter.")) return PARAMETERS.find((p) => p.name === (/\[(gt|gte|lt|lte)\]$/.test(name) ? "filter.<field>[gt|gte|lt|lte]" : "filter.<field>"));
  return undefined;
}

/** The anchor of a parameter's entry in the page's reference (`#param-filter.<field>` is awkward in URLs). */
export const parameterAnchor = (parameter: Parameter): string => `param-${parameter.name.replace(/[^a-z0-9_]+/gi, "-").replace(/-+$/, "")}`;

/** The README's parameter table, as `npm run docs` writes it. */
export function parametersMarkdown(): string {
  const cell = (text: string): string => text.replaceAll("|", "\\|");
  const meaning = (p: Parameter): string => p.meaning + (p.aggregateMeaning === undefined ? "" : `. On aggregates: ${p.aggregateMeaning}`);
  const rows = PARAMETERS.map((p) => `| \`${cell(p.name)}\` | ${cell(meaning(p))} | \`${cell(p.example)}\` |`);
  return ["| parameter | meaning | example |", "|---|---|---|", ...rows].join("\n");
}
