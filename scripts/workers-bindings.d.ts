// The binding types of src/config/env.ts, opaque: `npm run sign` shares the worker's config and
// link check (src/) in Node, where it never touches a binding, and Workers' types would clash with Node's.
type R2Bucket = {};
type Workflow<_Params = unknown> = {};
type RateLimit = {};
type Fetcher = {};
