import { aggregateRoute } from "./aggregate.ts";
import { resourceRoute, resourcesRoute, openApiRoute } from "./discovery.ts";
import { exportRoute } from "./exports.ts";
import { healthRoute } from "./health.ts";
import { indexRoute } from "./index-page.ts";
import { linksRoute } from "./links.ts";
import type { Route } from "./route.ts";
import { snapshotFileRoute, snapshotListRoute, snapshotRunRoute } from "./snapshots.ts";

/** Every route of the worker: the router registers these, /openapi.json describes these. */
export const ROUTES: readonly Route[] = [
  indexRoute,
  exportRoute,
  aggregateRoute,
  resourcesRoute,
  resourceRoute,
  openApiRoute,
  healthRoute,
  linksRoute,
  snapshotListRoute,
  snapshotRunRoute,
  snapshotFileRoute,
];
