// Which rows of which table an export asks for: what the query parser produces and CKAN answers.

export type FilterScalar = string | number | boolean;
/** CKAN 2.12's range filter: `{"gte": 10, "lt": 20}`. */
export type RangeOperator = "gt" | "gte" | "lt" | "lte";
export const RANGE_OPERATORS: readonly RangeOperator[] = ["gt", "gte", "lt", "lte"];
export type RangeFilter = Partial<Record<RangeOperator, FilterScalar>>;
/** CKAN's `filters`: field -> value, a list of values (any of them), or a range (CKAN 2.12+). */
export type Filters = Record<string, FilterScalar | FilterScalar[] | RangeFilter>;

export const isRangeFilter = (value: Filters[string]): value is RangeFilter =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Which rows of which table: the part of an export that CKAN answers. */
export interface TableQuery {
  resourceId: string;
  q: string | undefined;
  filters: Filters;
  limit: number | undefined;
  offset: number;
  fields: string[] | undefined;
  sort: string | undefined;
}
