import type { CopiedRecords } from "../rows/batch.ts";
import type { Column } from "../rows/types.ts";
import type { RawRecord } from "./raw-json.ts";
import type { Filters } from "../query/table-query.ts";

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
  /** Not CKAN's: reads the records from the answer's bytes with the search's reader (once, when the page's turn comes). */
  copy?: () => CopiedRecords;
}

/** Signature of the upstream fetch, injected so tests and the emulator can stand in for CKAN. */
export type UpstreamFetch = (request: Request) => Promise<Response>;
