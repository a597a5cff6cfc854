import type { Column } from "../format/types.ts";

export type FilterScalar = string | number | boolean;
/** CKAN's `filters`: field -> value, or a list of values (any of them). */
export type Filters = Record<string, FilterScalar | FilterScalar[]>;

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
  /** Objects or lists; one CSV/TSV string when records_format asked for that. */
  records: unknown[] | string;
  total?: number;
  total_was_estimated?: boolean;
  /** The limit CKAN applied: lower than asked when the site's rows_max capped it. */
  limit?: number;
  /** CKAN 2.12+ keyset paging: a filter to merge for the next page. */
  next_page?: Record<string, unknown>;
  /** Not CKAN's: the size of the answer, set by the client, for sizing later pages. */
  responseBytes?: number;
}

/** Signature of the upstream fetch, injected so tests and the emulator can stand in for CKAN. */
export type UpstreamFetch = (request: Request) => Promise<Response>;
