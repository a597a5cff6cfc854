import { BadParameter, clip } from "../errors.ts";
import { BOUNDS } from "./bounds.ts";
import { checkFieldName, parseFields, parseFilters } from "./filters.ts";
import type { CsvOptions, FormatName, NumericMode } from "./formats.ts";
import { appliesTo, choice, count, flag, readFlag, text, type LinkKind, type Parameter } from "./parameter.ts";
import { whoseMaximum } from "./row-limit.ts";
import { sortColumns } from "./sort.ts";

export { BOUNDS } from "./bounds.ts";
export type { Parameter, ParameterSchema } from "./parameter.ts";

/**
 * The one table of link parameters. Each entry declares what the parameter means (the README's
 * parameter table through `npm run docs`, the OpenAPI description and, through /openapi.json, the
 * link-builder page's reference), which formats take it, and how its value is read and checked
 * (the builders of query/parameter.ts give the common kinds their schema and checks from the same
 * fields). export-query.ts only combines the checked values.
 *
 * A second route family (aggregates) declares its own entries with the same builders (text, choice,
 * flag, count, or `read` of its own), checks a link's names with `checkNames(params, [...its
 * entries], format)`, reads `{ ...TABLE_PARAMETERS, ...its own }` with `readParameters`, turns the
 * table part into CKAN's TableQuery with export-query.ts's `tableQueryOf`, and describes its
 * parameters in OpenAPI with routes/openapi-parts.ts's `queryParameter`.
 */

export const DELIMITERS = [",", ";", "|"] as const;
export const DECIMALS = [".", ","] as const;
export const ERROR_MODES = ["inline", "status"] as const;
export const NUMERIC_MODES = ["text", "double"] as const satisfies readonly NumericMode[];
export type ErrorMode = (typeof ERROR_MODES)[number];

const CSV_TSV: readonly FormatName[] = ["csv", "tsv"];

const sortText = text({
  name: "sort",
  meaning:
    "CKAN's sort syntax, `column [asc|desc]` comma-separated; nulls come last ascending and first descending (PostgreSQL's order) unless the first column says `nulls last` or `nulls first`",
  example: "/export.csv?resource=sample&sort=amount desc nulls last, name",
  maxLength: BOUNDS.sort,
  blankIsAbsent: true,
});

/** Which table, which rows, in what order: what every route reading a CKAN table takes. */
export const TABLE_PARAMETERS = {
  resource: {
    ...text({
      name: "resource",
      meaning: "an alias from `RESOURCES` (unknown alias: 404, listing the published ones)",
      example: "/export.csv?resource=sample",
    }),
    read: (raw: string | undefined): string | undefined => {
      if (raw?.trim() === "") {
        throw new BadParameter(
          "resource",
          "Parameter resource is empty: give the name of a published table, resource=<name>.",
        );
      }
      return raw;
    },
  },
  resource_id: text({
    name: "resource_id",
    meaning: "a CKAN resource UUID (malformed: 400). Give exactly one of `resource` / `resource_id`",
    example: "/export.csv?resource_id=5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2",
  }),
  q: text({
    name: "q",
    meaning: "free-text search, passed to CKAN's `q`",
    example: "/export.csv?resource=sample&q=glacier",
    maxLength: BOUNDS.q,
    blankIsAbsent: true,
  }),
  filters: {
    name: "filters",
    meaning:
      'CKAN\'s own form: a JSON object, field -> value, field -> list of values (any of them), or field -> range `{"gte": 10, "lt": 20}` (CKAN 2.12+)',
    example: '/export.csv?resource=sample&filters={"category":["alpha","beta"],"active":true}',
    schema: { type: "string" },
    read: (raw, context) => parseFilters(raw, context.params),
  } satisfies Parameter<ReturnType<typeof parseFilters>>,
  limit: count({
    name: "limit",
    meaning: "most rows to return, 0 or more; absent means every matching row",
    example: "/export.csv?resource=sample&limit=100",
    aggregateMeaning: "most groups to return (top-N, after `sort`)",
    max: (context) => context.rowLimit.rows,
    above: (given, _max, context) =>
      `limit=${given} is above ${whoseMaximum(context.rowLimit)}. Use a smaller limit, add filters, or export in parts with offset.`,
  }),
  offset: count({
    name: "offset",
    meaning: "rows to skip first",
    example: "/export.csv?resource=sample&limit=100&offset=200",
    aggregateMeaning: "groups to skip first (after `sort`)",
    default: 0,
    max: () => Number.MAX_SAFE_INTEGER,
    above: (given, max) => `offset=${given} is above the largest offset this worker handles, ${max}.`,
  }),
  fields: {
    name: "fields",
    meaning: "comma-separated columns, in the order you want them",
    example: "/export.csv?resource=sample&fields=id,name,amount",
    schema: { type: "string" },
    only: "export",
    read: parseFields,
  } satisfies Parameter<ReturnType<typeof parseFields>>,
  sort: {
    ...sortText,
    aggregateMeaning:
      "output column names with `asc`/`desc` (`sort=sum(amount) desc`); default the group columns ascending. Nulls last ascending, first descending, unless a key ends in `nulls last` or `nulls first`; text by code point",
    read: (raw: string | undefined): string | undefined => {
      // An empty sort means the default order, as an empty q means no search.
      const sort = sortText.read(raw);
      if (sort !== undefined) for (const column of sortColumns(sort)) checkFieldName("sort", column);
      return sort;
    },
  } satisfies Parameter<string | undefined>,
} satisfies Record<string, Parameter>;

/** The header row's values; which a format refuses, it says (a sheet always has one, Parquet always names columns). */
function header(raw: string | undefined, format: string): CsvOptions["header"] {
  if (raw === "label") return "label";
  if (raw !== undefined && !["1", "0", "true", "false"].includes(raw)) {
    throw new BadParameter("header", `Parameter header must be 1, 0 or label (got "${clip(raw)}").`);
  }
  if (readFlag("header", raw, true)) return "id";
  if (format === "xlsx")
    throw new BadParameter(
      "header",
      "An XLSX sheet always has its header row (frozen above the data): use header=1 or header=label.",
    );
  if (format === "parquet")
    throw new BadParameter("header", "A Parquet file always names its columns: use header=1 (ids) or header=label.");
  return "none";
}

/** How the file is written: each format takes the ones its `formats` name. */
export const OUTPUT_PARAMETERS = {
  filename: text({
    name: "filename",
    meaning: "download name (the extension is added when missing)",
    example: "/export.csv?resource=sample&filename=budget-2024",
  }),
  bom: flag({
    name: "bom",
    meaning: "CSV/TSV: `1` starts the file with a UTF-8 byte order mark, so Excel's double-click reads accents right",
    example: "/export.csv?resource=sample&bom=1",
    default: false,
    formats: CSV_TSV,
  }),
  header: {
    name: "header",
    meaning:
      "CSV/TSV/XLSX/Parquet: `label` heads (names) each column with its data dictionary label (its id where it has none); CSV/TSV: `0` leaves out the header row",
    example: "/export.csv?resource=sample&header=label",
    schema: { type: "string", enum: ["1", "0", "true", "false", "label"], default: "1" },
    formats: ["csv", "tsv", "xlsx", "parquet"],
    read: (raw, context) => header(raw, context.format),
  } satisfies Parameter<CsvOptions["header"]>,
  delimiter: choice({
    name: "delimiter",
    meaning: "CSV: `,` (default), `;` (for semicolon locales, write it `%3B`) or `|`",
    example: "/export.csv?resource=sample&delimiter=%3B",
    values: DELIMITERS,
    default: ",",
    formats: ["csv"],
  }),
  decimal: choice({
    name: "decimal",
    meaning:
      "CSV/TSV: `,` writes the numbers of numeric columns with a decimal comma (`-0,50`), so a German, French or Dutch import reads them as numbers. Needs `delimiter=;` (or `|`, or TSV): with the comma delimiter it is a 400",
    example: "/export.csv?resource=sample&delimiter=%3B&decimal=,",
    values: DECIMALS,
    default: ".",
    formats: CSV_TSV,
  }),
  formula_guard: flag({
    name: "formula_guard",
    meaning: "CSV/TSV: `0` turns off the formula-injection guard (below) for this link",
    example: "/export.csv?resource=sample&formula_guard=0",
    default: true,
    formats: CSV_TSV,
  }),
  numeric: choice({
    name: "numeric",
    meaning:
      "Parquet: how columns of CKAN's `numeric` type are written. `text` (default) keeps every digit and trailing zero CKAN sent, as UTF-8 text (`CAST(amount AS DECIMAL(18,2))` in DuckDB, `pd.to_numeric` in pandas); `double` writes 64-bit floats, which readers sum at once but which keep only about 16 significant digits",
    example: "/export.parquet?resource=sample&numeric=double",
    values: NUMERIC_MODES,
    default: "text",
    formats: ["parquet"],
  }),
  errors: choice({
    name: "errors",
    meaning:
      "CSV/TSV/XLSX: `inline` answers an error before the first byte as a one-cell table `#ERROR: <message>` with HTTP 200 (and `X-Export-Error: <status>`, never cached), which a spreadsheet shows; `status` gives the JSON error and its status. Default: inline for Google Sheets' and Power Query's fetchers, status for everyone else",
    example: "/export.csv?resource=sample&errors=inline",
    values: ERROR_MODES,
    formats: ["csv", "tsv", "xlsx"],
  }),
} satisfies Record<string, Parameter>;

/** What an aggregate computes: its groups and its measures (checked against the table's columns once they are known). */
export const AGGREGATE_PARAMETERS = {
  group_by: {
    ...text({
      name: "group_by",
      meaning:
        "aggregates: comma-separated group columns and date buckets `year(f)`, `month(f)`, `day(f)`, `hour(f)` (date and timestamp columns; a bucket is its first instant). At most 8; absent: one row of totals. Not json columns",
      example: "/aggregate.csv?resource=sample&group_by=category,month(created)",
      maxLength: BOUNDS.sort,
    }),
    only: "aggregate",
  },
  measures: {
    ...text({
      name: "measures",
      meaning:
        "aggregates: comma-separated `count` (rows), `count(f)` (values), `sum(f)`, `avg(f)` (numeric columns), `min(f)`, `max(f)` (numbers, text, dates, timestamps); each output column is named as written. At most 16; default `count`",
      example: "/aggregate.csv?resource=sample&group_by=category&measures=count,sum(amount),avg(ratio)",
      maxLength: BOUNDS.sort,
    }),
    schema: { type: "string", maxLength: BOUNDS.sort, default: "count" },
    only: "aggregate",
  },
} satisfies Record<string, Parameter<string | undefined>>;

/** Names the parser reads apart (`filter.<field>`), the signed-link check reads, or nobody reads. */
const OTHER_NAMES = {
  filterField: {
    name: "filter.<field>",
    meaning: "the URL-friendly form; repeat it for a list. May be combined with `filters`, but not on the same field",
    example: "/export.csv?resource=sample&filter.category=alpha&filter.category=beta",
    schema: { type: "string" },
    repeatable: true,
    pattern: true,
  },
  filterBound: {
    name: "filter.<field>[gt|gte|lt|lte]",
    meaning:
      "a bound of a range (CKAN 2.12+): rows above/at least/below/at most the value, compared as the column's type. Combine bounds freely; not with an exact `filter.<field>` on the same field",
    example: "/export.csv?resource=sample&filter.amount[gte]=100&filter.created[lt]=2021-01-01",
    schema: { type: "string" },
    pattern: true,
  },
  exp: {
    name: "exp",
    meaning: "signed links: when the link stops working, in Unix seconds; covered by the signature (see Signed links)",
    example: "/export.csv?resource=sample&exp=1798000000&sig=...",
    schema: { type: "integer", minimum: 0 },
    link: true,
  },
  sig: {
    name: "sig",
    meaning:
      "signed links: the HMAC signature of the path and every other parameter, required when the worker has `LINK_SIGNING_KEY`",
    example: "/export.csv?resource=sample&sig=...",
    schema: { type: "string" },
    link: true,
  },
  anything: {
    name: "_anything",
    meaning: "ignored: a name starting with `_` is a cache buster",
    example: "/export.csv?resource=sample&_=1700000000",
    schema: { type: "string" },
    pattern: true,
  },
} satisfies Record<string, Parameter>;

/** Every parameter of an export link, by key. */
export const EXPORT_PARAMETERS = { ...TABLE_PARAMETERS, ...OUTPUT_PARAMETERS };

/** The whole table, in the order the README, OpenAPI and the page show it. */
export const PARAMETERS: readonly Parameter[] = [
  TABLE_PARAMETERS.resource,
  TABLE_PARAMETERS.resource_id,
  TABLE_PARAMETERS.q,
  TABLE_PARAMETERS.filters,
  OTHER_NAMES.filterField,
  OTHER_NAMES.filterBound,
  TABLE_PARAMETERS.limit,
  TABLE_PARAMETERS.offset,
  TABLE_PARAMETERS.fields,
  TABLE_PARAMETERS.sort,
  AGGREGATE_PARAMETERS.group_by,
  AGGREGATE_PARAMETERS.measures,
  ...Object.values(OUTPUT_PARAMETERS),
  OTHER_NAMES.exp,
  OTHER_NAMES.sig,
  OTHER_NAMES.anything,
];

/** The parameters one kind of link may carry, whatever its format. */
export const parametersOf = (kind: LinkKind): Parameter[] =>
  PARAMETERS.filter((p) => p.only === undefined || p.only === kind);

/** The parameters a link to this format may carry, in table order. */
export const parametersFor = (format: FormatName, kind: LinkKind = "export"): Parameter[] =>
  parametersOf(kind).filter((p) => appliesTo(p, format));

/** The table entry a parameter name in an error belongs to (`filter.year` -> `filter.<field>`). */
export function parameterEntry(name: string): Parameter | undefined {
  const literal = PARAMETERS.find((p) => !p.pattern && p.name === name);
  if (literal !== undefined) return literal;
  if (name.startsWith("filter."))
    return /\[(gt|gte|lt|lte)\]$/.test(name) ? OTHER_NAMES.filterBound : OTHER_NAMES.filterField;
  return undefined;
}

/** The anchor of a parameter's entry in the page's reference (`#param-filter.<field>` is awkward in URLs). */
export const parameterAnchor = (parameter: Parameter): string =>
  `param-${parameter.name.replace(/[^a-z0-9_]+/gi, "-").replace(/-+$/, "")}`;

/** The README's parameter table, as `npm run docs` writes it. */
export function parametersMarkdown(): string {
  const cell = (text: string): string => text.replaceAll("|", "\\|");
  const rows = PARAMETERS.map((p) => `| \`${cell(p.name)}\` | ${cell(p.meaning)} | \`${cell(p.example)}\` |`);
  return ["| parameter | meaning | example |", "|---|---|---|", ...rows].join("\n");
}
