import type { CopiedRecords } from "../format/batch.ts";
import type { Column } from "../format/types.ts";
import type { RawRecord } from "./raw-json.ts";

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

/** The body of one `datastore_search` call, as this worker sends it. */
export interface SearchRequest {
  resource_id: string;
  q?: string;
  filters?: Filters | Record<string, unknown>;
  limit: number;
  offset?: number;
  fields?: string[];
  sort?: string;
  records_format?: "objects" | "lists" | "csv";
  include_total?: boolean;
  include_next_page?: boolean;
}

/** The parts of CKAN's `result` this worker reads; everything else (`_links` included) is ignored. */
export interface SearchResult {
  fields: Column[];
  /** Records with each value's exact JSON text; one CSV string when records_format asked for that. */
  records: RawRecord[] | string;
  total?: number;
  total_was_estimated?: boolean;
  /** The limit CKAN applied: lower than asked when the site's rows_max capped it. */
  limit?: number;
  /** CKAN 2.12+ keyset paging: a filter to merge for the next page. */
  next_page?: Record<string, unknown>;
  /** Not CKAN's: the size of the answer, set by the client, for sizing later pages. */
  responseBytes?: number;
  /** Not CKAN's: the records as the search's reader copied them from the answer's bytes. */
  copied?: CopiedRecords;
}

/** Signature of the upstream fetch, injected so tests and the emulator can stand in for CKAN. */
export type UpstreamFetch = (request: Request) => Promise<Response>;
