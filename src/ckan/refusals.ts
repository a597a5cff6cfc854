import { BadParameter, HttpError } from "../errors.ts";
import { sortColumns } from "../query/sort.ts";
import { isRangeFilter, type TableQuery } from "../query/table-query.ts";
import { CkanQueryRefused, CkanValidationError } from "./error-answers.ts";

/**
 * CKAN refused a parameter that names columns (fields, sort, filters): perhaps over a column the
 * table lacks, which the column hint (discovery/column-hint.ts) then names.
 */
export class ColumnRefusal extends BadParameter {}

/** What CKAN calls the parameters that name columns, as our parameters are called too. */
const COLUMN_PARAMETERS = new Set(["fields", "sort", "filters"]);

/**
 * A sort CKAN could not run (PostgreSQL has no order for the column's type: json, for one). The
 * column hint names each sorted column's type once it has the table's columns.
 */
export class SortRefused extends ColumnRefusal {
  readonly columns: string[];
  constructor(columns: string[], cause: unknown) {
    const names = columns.map((c) => `"${c}"`).join(", ");
    super(
      "sort",
      `CKAN could not sort by ${names}: PostgreSQL has no order for a column of its type (json, for one). Sort by another column.`,
      { cause },
    );
    this.columns = columns;
  }
}

/**
 * CKAN's refusal of the first page said in terms of the link: which parameter is at fault, named
 * only when the link has it (a refused query blames `filters` only when there are filters).
 */
export function explainRefusal(error: unknown, query: TableQuery, before212: boolean): unknown {
  return rangeFilterRefused(error, query, before212) ?? queryRefused(error, query) ?? columnRefused(error) ?? error;
}

/** CKAN's own refusal of a column-naming parameter (`invalid value "nope desc"`), as a ColumnRefusal. */
function columnRefused(error: unknown): ColumnRefusal | undefined {
  if (!(error instanceof CkanValidationError) || error.status !== 400 || !COLUMN_PARAMETERS.has(error.parameter ?? ""))
    return undefined;
  return new ColumnRefusal(error.parameter!, error.message, { cause: error });
}

/**
 * CKAN before 2.12 has no range filters: it rejects the filter, or fails building SQL for it. Said
 * plainly, since CKAN's own message would blame the filter's value.
 */
function rangeFilterRefused(error: unknown, query: TableQuery, before212: boolean): HttpError | undefined {
  const ranged = Object.keys(query.filters).filter((field) => isRangeFilter(query.filters[field]!));
  if (
    ranged.length === 0 ||
    !(error instanceof HttpError) ||
    error.status < 400 ||
    error.status === 403 ||
    error.status === 404
  )
    return undefined;
  const fields = ranged.map((f) => `"${f}"`).join(", ");
  if (before212) {
    return new ColumnRefusal(
      "filters",
      `This CKAN site does not support range filters (on ${fields}); they need CKAN 2.12 or later. Filter on exact values instead.`,
      {
        cause: error,
      },
    );
  }
  if (error.status !== 400 && error.status !== 502) return undefined;
  return new ColumnRefusal(
    "filters",
    `CKAN refused the range filter on ${fields}: either the site runs a CKAN older than 2.12 (range filters need 2.12), or a bound does not fit the column's type.`,
    { cause: error },
  );
}

/** PostgreSQL refused the query CKAN built: a filter value of the wrong type, or a sort it cannot order. */
function queryRefused(error: unknown, query: TableQuery): HttpError | undefined {
  if (!(error instanceof CkanQueryRefused)) return undefined;
  const filtered = Object.keys(query.filters).length > 0;
  if (filtered && query.sort === undefined) {
    return new ColumnRefusal(
      "filters",
      "CKAN could not run the query: a filter value probably does not fit its column's type (for example text in a number column).",
      { cause: error },
    );
  }
  if (!filtered && query.sort !== undefined) return new SortRefused(sortColumns(query.sort), error);
  const why = filtered
    ? ": a filter value may not fit its column's type (text in a number column), or a sorted column's type has no order (json, for one)"
    : "";
  return new HttpError(400, `CKAN could not run the query${why}.`, { cause: error });
}
