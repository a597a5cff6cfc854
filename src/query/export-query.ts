import type { Config } from "../config/config.ts";
import { UUID_PATTERN } from "../config/settings.ts";
import { BadParameter, clip, HttpError } from "../errors.ts";
import { downloadName } from "./filename.ts";
import { FORMATS, isFormatName, type FormatName, type NamedColumns, type Output } from "./formats.ts";
import { appliesTo, checkNames, readParameters, single, type Values } from "./parameter.ts";
import { EXPORT_PARAMETERS, OUTPUT_PARAMETERS, parametersOf, type ErrorMode, type TABLE_PARAMETERS } from "./params.ts";
import { rowLimitOf, type RowLimit } from "./row-limit.ts";
import type { TableQuery } from "./table-query.ts";

/**
 * A validated export: which rows CKAN should send (TableQuery), the format and its own options
 * (Output), and the rest of the link's parameters. Built once from the link; nothing reads the URL again.
 */
export type ExportQuery = TableQuery &
  Output & {
    /** The alias from RESOURCES when the link used `resource=`. */
    alias: string | undefined;
    filename: string;
    /** The most rows this export may hold (worked out here, checked by the paging). */
    rowLimit: RowLimit;
    /** How an error before the first byte is answered; undefined: as the caller's User-Agent suggests. */
    errors: ErrorMode | undefined;
  };

/** What of the configuration a link is checked against. */
export type QueryConfig = Pick<Config, "resources" | "allowUnlisted" | "linkSigningKey" | "maxRows">;

/**
 * The names a caller may use instead, when that reveals nothing: with signing on, what is published
 * is for operators only (discovery needs the admin token too).
 */
function publishedNames(config: Pick<Config, "resources" | "linkSigningKey">): string {
  if (config.linkSigningKey !== undefined || config.resources.size === 0) return "";
  const names = [...config.resources.keys()];
  const shown = names.slice(0, 20).join(", ");
  return ` Published: ${shown}${names.length > 20 ? ` and ${names.length - 20} more` : ""} (GET /resources lists them).`;
}

/** The one answer to a name RESOURCES does not hold, for links and discovery alike. */
export const unknownAlias = (config: Pick<Config, "resources" | "linkSigningKey">, alias: string): HttpError =>
  new HttpError(404, `No resource is published under the name "${clip(alias)}".${publishedNames(config)}`, {
    parameter: "resource",
  });

/** The table a link names (`resource` or `resource_id`), as this worker publishes it. */
export function resolveResource(
  given: { resource: string | undefined; resource_id: string | undefined },
  config: QueryConfig,
): { resourceId: string; alias: string | undefined } {
  const { resource: alias, resource_id: id } = given;
  if (id !== undefined && alias !== undefined)
    throw new BadParameter("resource", "Give either resource or resource_id, not both.");
  if (alias !== undefined) {
    const mapped = config.resources.get(alias);
    if (mapped === undefined) throw unknownAlias(config, alias);
    return { resourceId: mapped, alias };
  }
  if (id === undefined)
    throw new BadParameter("resource_id", "Say which table to export: resource=<name> or resource_id=<UUID>.");
  if (!UUID_PATTERN.test(id)) {
    throw new BadParameter(
      "resource_id",
      `Parameter resource_id must be a resource UUID like 5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2 (got "${clip(id)}").`,
    );
  }
  const resourceId = id.toLowerCase();
  // Same answer whether or not the resource exists upstream: the refusal must not reveal that.
  if (!config.allowUnlisted && ![...config.resources.values()].includes(resourceId)) {
    throw new HttpError(
      403,
      `Resource ${resourceId} is not published by this worker. Use one of the names it publishes (resource=<name>).`,
      {
        parameter: "resource_id",
      },
    );
  }
  return { resourceId, alias: undefined };
}

/** The checked table parameters as CKAN is asked them: for any route that reads a table's rows. */
export function tableQueryOf(
  values: Values<typeof TABLE_PARAMETERS>,
  config: QueryConfig,
): TableQuery & { alias: string | undefined } {
  const { q, filters, limit, offset, fields, sort } = values;
  return { ...resolveResource(values, config), q, filters, limit, offset, fields, sort };
}

/** Each format's options from the checked output parameters. */
function outputOf(format: FormatName, values: Values<typeof OUTPUT_PARAMETERS>): Output {
  const { bom, header, delimiter, formula_guard: formulaGuard, decimal } = values;
  if (decimal === "," && format === "csv" && delimiter === ",") {
    throw new BadParameter(
      "decimal",
      "decimal=, needs another delimiter: with commas between cells, a decimal comma would split every number in two. Add delimiter=%3B (a semicolon), as semicolon locales expect.",
    );
  }
  const named: NamedColumns = { header: header === "label" ? "label" : "id" };
  switch (format) {
    case "csv":
      return { format, options: { bom, header, delimiter, formulaGuard, decimal } };
    case "tsv":
      return { format, options: { bom, header, delimiter: "\t", formulaGuard, decimal } };
    case "xlsx":
      return { format, options: named };
    case "parquet":
      return { format, options: { ...named, numeric: values.numeric } };
    case "json":
    case "ndjson":
      return { format, options: {} };
  }
}

export function parseExportQuery(params: URLSearchParams, format: FormatName, config: QueryConfig): ExportQuery {
  checkNames(params, parametersOf("export"), format);
  const rowLimit = rowLimitOf(format, config.maxRows);
  const values = readParameters(EXPORT_PARAMETERS, { format, params, rowLimit });
  const table = tableQueryOf(values, config);
  return {
    ...table,
    ...outputOf(format, values),
    filename: downloadName(values.filename, table.alias ?? table.resourceId, FORMATS[format].extension),
    rowLimit,
    errors: values.errors,
  };
}

/**
 * How an error on this link is answered, read before (and whatever becomes of) the rest of the link:
 * `errors=inline` or `errors=status` as it asks; `status` for a format that takes no `errors` (JSON);
 * undefined when the link does not say (or says it wrongly, which its own 400 then reports): the
 * caller's User-Agent decides.
 */
export function errorModeOf(params: URLSearchParams, format: string): ErrorMode | undefined {
  if (!isFormatName(format) || !appliesTo(OUTPUT_PARAMETERS.errors, format)) return "status";
  try {
    return OUTPUT_PARAMETERS.errors.read(single(params, "errors"));
  } catch {
    return undefined;
  }
}
