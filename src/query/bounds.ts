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
